#!/bin/bash
# run-two.sh BUILD [--bench] — the two-guest half of `make test-kernel` (and
# `make bench-kernel`): our ivshmem server, two TCG guests joined by an
# ivshmem-doorbell function (scilan.ko's ivshmem backend) and a virtio-net
# link, sl2test in both (plus an unmodified program under the preload hook,
# needs $BUILD/lib/libscilan_preload.so); "kernel2 <test> <passed> <failed>" lines go to
# BUILD/results/kernel-two.txt, the bench table to BUILD/results/bench-kernel-two.md.
# Any Oops/WARNING/BUG in either guest's log fails the suite.
# SCILAN_PCAP=1 also writes each guest's virtio-net traffic to
# BUILD/kernel-two/net-<guest>.pcap (tcpdump -r reads it).
set -u
build=$(realpath "$1")
bench=${2:-}
here=$(dirname "$(realpath "$0")")
top=$(realpath "$here/../..")
work=$build/kernel-two
results=$build/results
out=$results/kernel-two.txt
mkdir -p "$work" "$results"
: >"$out"
fail_setup() { echo "run-two.sh: $*" >&2; echo "kernel2 setup 0 1" >>"$out"; exit 1; }

. "$here/guest_lib.sh"
guest_kernel

# The server and the initramfs (busybox, virtio-net, ntb.ko, scilan.ko, sl2test;
# inet_diag and tcp_diag: the shm fabric's rendezvous asks the kernel who holds
# a TCP socket, for the test with both fabrics in one process).
server=$work/ivshmem_server
guest_root_base "$work/root" "$server"
cp "$mods/net/ipv4/inet_diag.ko" "$mods/net/ipv4/tcp_diag.ko" "$work/root/lib/" || fail_setup "no $mods/net/ipv4/tcp_diag.ko"
gcc -static -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/src" -I"$top/driver" \
	-o "$work/root/bin/sl2test" "$here/sl2test.c" "$here/sl2test_moves.c" || fail_setup "sl2test build"
# An unmodified, dynamically linked program for the hook test: tests/hook/progs/peer
# with its shared libraries and libscilan_preload.so.
gcc -std=gnu11 -O2 -D_GNU_SOURCE -pthread -I"$top/tests/hook/progs" -o "$work/root/bin/peer" \
	"$top/tests/hook/progs/peer.c" "$top/tests/hook/progs/scen.c" || fail_setup "peer build"
# epollset: one epoll set across the link (the set's event queue on ivshmem).
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -pthread -I"$top/libscilan/include" -o "$work/root/bin/epollset" \
	"$here/epollset.c" || fail_setup "epollset build"
# plainacc: a hooked listener whose connections are accepted by a raw accept4
# or io_uring (the device fabric's agreement).
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -o "$work/root/bin/plainacc" "$here/plainacc.c" -luring ||
	fail_setup "plainacc build"
# linkback: the cable pulled and put back under one live connection, again and again.
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/include" -o "$work/root/bin/linkback" \
	"$here/linkback.c" || fail_setup "linkback build"
cp "$build/lib/libscilan_preload.so" "$work/root/lib/" || fail_setup "no libscilan_preload.so (make hook)"
guest_copy_libs "$work/root" "$work/root/bin/peer" "$work/root/bin/epollset" "$work/root/bin/plainacc" \
	"$work/root/bin/linkback" "$build/lib/libscilan_preload.so"
install -m 755 "$here/init-two" "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

# Round trips per ping-pong (polling: 10x) and stream bytes.
if [ "$bench" = --bench ]; then args=5000,67108864; else args=2000,16777216; fi

sock=$work/ivshmem.sock
rm -f "$sock"
"$server" -S "$sock" -l 16M -n 2 -v 2>"$work/server.log" &
spid=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { kill $spid; fail_setup "the ivshmem server did not start"; }

# The guests' virtio-net link: a pair of unix datagram sockets (QEMU's dgram
# netdev).  Not the socket netdev's TCP stream: the host's Nagle held a frame
# sent right after another (a guest's ACK, then its next request) until the
# host's delayed ACK, 40 ms, so request/response tests crawled.
rm -f "$work/net-a.sock" "$work/net-b.sock"

# TCG with one vCPU thread per guest, but maxcpus=2: QEMU then translates
# locked instructions into host atomics (parallel TCG), which the cross-guest
# atomics of the driver and the ring protocol need.
accel="-accel tcg,thread=multi"
if [ "${SCILAN_QEMU_ACCEL:-tcg}" = kvm ] && [ -w /dev/kvm ]; then accel="-enable-kvm -cpu host"; fi
guest() { # role peer-role
	timeout 300 qemu-system-x86_64 $accel -m 512 -smp 1,maxcpus=2 -nographic -no-reboot \
		-kernel "$kernel" -initrd "$work/initramfs.gz" \
		-append "console=ttyS0 panic=-1 loglevel=6 scilan_role=$1 scilan_args=$args" \
		-chardev socket,path="$sock",id=ivsh -device ivshmem-doorbell,chardev=ivsh,vectors=2 \
		-netdev dgram,id=n0,local.type=unix,local.path="$work/net-$1.sock",remote.type=unix,remote.path="$work/net-$2.sock" \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4e:00:0${1/a/1} \
		${SCILAN_PCAP:+-object filter-dump,id=f0,netdev=n0,file=$work/net-$1.pcap} \
		>"$work/console-$1.log" 2>&1 </dev/null
	echo $? >"$work/qemu-$1.rc"
}
start=$(date +%s)
guest a b &
pa=$!
sleep 1
guest b a &
pb=$!
wait $pa $pb
end=$(date +%s)
kill $spid 2>/dev/null
wait $spid 2>/dev/null
echo "run-two.sh: guests ran $((end - start)) s ($accel), qemu exit a $(cat "$work/qemu-a.rc") b $(cat "$work/qemu-b.rc")"

passed=0 failed=0
count() { # name pass?
	if [ "$2" = 1 ]; then echo "kernel2 $1 1 0" >>"$out"; passed=$((passed + 1));
	else echo "kernel2 $1 0 1" >>"$out"; failed=$((failed + 1)); fi
}
for r in a b; do
	log=$work/console-$r.log
	tr -d '\r' <"$log" | grep -aE '^(TEST|BENCH|STATE) |scilan-guest' | sed "s/^/[$r] /"
	while read -r _ name verdict _; do
		[ "$verdict" = PASS ] && count "${r}_$name" 1 || count "${r}_$name" 0
	done < <(tr -d '\r' <"$log" | grep -aE '^TEST [A-Za-z0-9_]+ (PASS|FAIL)')
	guest_fail_details "$log" "kernel2-$r" "$results"
	if grep -aqE 'Oops|WARNING:|(^|[^A-Z])BUG:|general protection|Call Trace|Kernel panic' "$log"; then
		echo "run-two.sh: kernel problems in guest $r's log:"
		grep -aE -A20 'Oops|WARNING:|(^|[^A-Z])BUG:|general protection|Kernel panic' "$log" | head -60
		count "${r}_guest_log_clean" 0
	else
		count "${r}_guest_log_clean" 1
	fi
	grep -aq 'scilan-guest: done' "$log" && count "${r}_guest_finished" 1 ||
		{ echo "run-two.sh: guest $r did not finish; log: $log"; count "${r}_guest_finished" 0; }
done
# Tests every guest must have reported (a missing one is a failure too).
for t in a_load_unload a_link_up a_pingpong_interrupt a_pingpong_polling a_stream a_killed_while_mapped \
	a_hostile_args a_hook_dev_program a_plain_acceptor_raw a_plain_acceptor_uring b_plain_acceptor_raw \
	b_plain_acceptor_uring a_link_cut_fails_over b_link_cut_fails_over \
	a_link_cut_fails_over_interrupt b_link_cut_fails_over_interrupt a_both_fabrics_in_one_process a_peer_poweroff_reset a_final_unload b_load_unload b_link_up \
	b_stream b_hook_dev_program b_both_fabrics_in_one_process a_epoll_set_link_cut b_epoll_set_link_cut; do
	grep -q "^kernel2 $t " "$out" || { echo "run-two.sh: no result for $t"; count "${t}_reported" 0; }
done

# The bench table: guest a's figures (TCG: only the ratios mean something).
blog=$(tr -d '\r' <"$work/console-a.log" | grep -a '^BENCH ')
val() { echo "$blog" | awk -v n="$1" -v k="$2" '$2 == n { for (i = 3; i < NF; i++) if ($i == k) print $(i + 1) }'; }
tp50=$(val tcp_virtio_net p50_us) tp99=$(val tcp_virtio_net p99_us)
tmb=$(val tcp_stream MB_s)
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b }'; }
{
	echo "| path (two TCG guests) | RTT p50 us | RTT p99 us | TCP p50 / this p50 |"
	echo "|---|---|---|---|"
	for n in scilan_polling scilan_interrupt tcp_virtio_net; do
		echo "| $n | $(val $n p50_us) | $(val $n p99_us) | $(ratio "$tp50" "$(val $n p50_us)") |"
	done
	echo
	echo "| stream | MB/s | this / TCP |"
	echo "|---|---|---|"
	for n in scilan_stream tcp_stream; do
		echo "| $n | $(val $n MB_s) | $(ratio "$(val $n MB_s)" "$tmb") |"
	done
} >"$results/bench-kernel-two.md"
cat "$results/bench-kernel-two.md"
echo "kernel2: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
