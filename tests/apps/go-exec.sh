#!/usr/bin/env bash
# tests/apps/go-exec.sh — a hooked bash exchanges a line with a hooked Perl
# echo server over /dev/tcp, then execs a dynamically linked Go client on the
# connection (tests/apps/go/execd_client.go, built here): Go makes its own
# system calls, so the connection must reach it on kernel TCP, with the bytes
# the server echoed before the exec, and 1 MB each way after it, in order.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
apps_init go-exec

BYTES=1000000
GO_CLIENT=$WORK/execd_client
# Built with cgo (the default where gcc is): dynamically linked, so the
# preload is loaded into it, as into any Go program a user runs.
command -v go >/dev/null || { echo "go-exec: no go compiler (tests/apps/deps.sh installs golang-go)" >&2; exit 1; }
GOCACHE=$WORK/gocache GOPATH=$WORK/gopath GO111MODULE=off GOFLAGS='' CGO_ENABLED=1 \
	go build -o "$GO_CLIENT" "$APPS_DIR/go/execd_client.go"
readelf -lW "$GO_CLIENT" | grep -q 'Requesting program interpreter' ||
	{ echo "go-exec: the Go client is not dynamically linked" >&2; exit 1; }

server() { # MODE
	PORT=$(free_port)
	# shellcheck disable=SC2016 # Perl's variables, not the shell's
	daemon srv "$1" perl -MIO::Socket::INET -e '
		my $l = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 4,
					      ReuseAddr => 1) or die "listen: $!\n";
		my $c = $l->accept or die "accept: $!\n";
		my ($buf, $total) = ("", 0);
		while (1) {
			my $n = sysread($c, $buf, 65536);
			die "read after $total bytes: $!\n" unless defined $n;
			last if $n == 0;
			for (my $off = 0; $off < $n;) {
				my $w = syswrite($c, $buf, $n - $off, $off);
				die "write after $total bytes: $!\n" unless defined $w;
				$off += $w;
			}
			$total += $n;
		}
		print "served $total bytes\n";' "$PORT"
	wait_listen "$PORT"
}

# The hooked bash: a line there and back (the connection is accelerated and
# used), then "early", whose echo the Go client must read first.
exec_case() {
	local mode=$1 served
	server "$mode"
	pre "$mode"
	# shellcheck disable=SC2016 # the inner bash's arguments
	SCILAN_LOG=info timeout -k 5 60 "${PRE[@]}" bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1"
		printf "hello\n" >&3
		IFS= read -r line <&3
		[ "$line" = hello ] || { echo "bash: the echo of hello was \"$line\"" >&2; exit 1; }
		printf early >&3
		exec "$2" early "$3"' bash "$PORT" "$GO_CLIENT" "$BYTES" >"$WORK/client.out" 2>"$WORK/client.err" ||
		{ local rc=$?; cat "$WORK/client.out" "$WORK/client.err" >&2; echo "client exited with status $rc" >&2; return "$rc"; }
	cat "$WORK/client.out"
	grep -q 'intact true' "$WORK/client.out"
	reap srv
	cat "$WORK/srv.out" "$WORK/srv.err"
	served=$(sed -n 's/^served \([0-9]*\) bytes$/\1/p' "$WORK/srv.out")
	expect "the server to have echoed every byte" "${served:-0}" -eq $((6 + 5 + BYTES))
	# The line went over the rings both ways ("early" and its echo too,
	# unless the move came first); then the connection moved to kernel TCP,
	# the peer's doing.
	check_stats "$mode" server 0 6 6 "$WORK/srv.err"
	if [ "$mode" != kernel ]; then
		grep -q 'fallback reasons: peer-moved 1' "$WORK/srv.err" ||
			{ echo "the server's connection did not end as peer-moved" >&2; return 1; }
		# Moved to kernel TCP by the exec, not reset.
		grep -q 'kernel TCP, exec: ' "$WORK/client.err" ||
			{ cat "$WORK/client.err" >&2; echo "no fallback logged as exec" >&2; return 1; }
		if grep -a 'reset' "$WORK/srv.err" "$WORK/client.err"; then
			echo "the connection was reset" >&2
			return 1
		fi
	fi
	echo "ok: $BYTES bytes each way through the exec'd Go client"
}

for mode in $MODES; do
	run_case "$mode exec into a Go client" exec_case "$mode"
done
apps_finish
