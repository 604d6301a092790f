// execd_client.go — a Go program exec'd on an inherited connection (fd 3) by a
// hooked process (tests/apps/go-exec.sh): Go reads and writes its sockets with
// system calls of its own, never libc's.  It sends BYTES of a pattern at once
// (half-closing after them) while it reads the PREFIX its exec'er was still
// owed, then the echo up to EOF; "intact true" only if every byte came back in
// order.
package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: execd_client PREFIX BYTES")
		os.Exit(2)
	}
	prefix := []byte(os.Args[1])
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "BYTES:", err)
		os.Exit(2)
	}
	conn, err := net.FileConn(os.NewFile(3, "inherited"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fd 3:", err)
		os.Exit(1)
	}
	c := conn.(*net.TCPConn)
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(i*7 + i/251)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(out)
		if err == nil {
			err = c.CloseWrite()
		}
		sent <- err
	}()
	owed := make([]byte, len(prefix))
	if _, err := io.ReadFull(c, owed); err != nil {
		fmt.Printf("go: reading the %d bytes owed before the exec: %v (got %q)\n", len(prefix), err, owed)
		os.Exit(1)
	}
	in, rerr := io.ReadAll(c)
	werr := <-sent
	fmt.Printf("go: owed %q, sent %d (%v), echoed %d (%v), intact %v\n", owed, n, werr, len(in), rerr,
		bytes.Equal(owed, prefix) && bytes.Equal(in, out))
	if werr != nil || rerr != nil || !bytes.Equal(owed, prefix) || !bytes.Equal(in, out) {
		os.Exit(1)
	}
}
