#!/bin/bash
# run-n.sh BUILD N [all|scale|redis|bench|benchconns] — the N-guest suite of
# `make test-fabric`: N TCG guests on one ivshmem server (scilan.ko
# ivshmem_nodes=N), joined for kernel TCP by taps on a bridge in a network
# namespace of its own, running tests/kernel/init-n's scenario: "all" (every
# guest a server and a client of every other, interrupt and polling mode,
# then the last guest powered off mid-run), "scale" (1,024 connections
# between two guests, then one past the slices) or "redis" (4 guests: a
# Redis Cluster of three masters, created, benchmarked and loaded from the
# fourth, then one master powered off; tests/kernel/redis-cluster.sh);
# "bench" and "benchconns" are `make bench-kernel`'s (nbench, tabulated by
# tests/kernel/bench-n.sh).
# "kernelN <scenario>_n<id>_<test> <passed> <failed>" lines go to
# BUILD/results/kernel-n-<scenario>.txt; any Oops/WARNING/BUG in a guest's log,
# a guest that does not finish, or a test it did not report fails.
# SCILAN_GUEST_APPEND adds guest kernel arguments (to compare a setting,
# e.g. "clocksource=tsc tsc=reliable" against TCG's default HPET).
set -u
build=$(realpath "$1")
nodes=${2:-4}
scen=${3:-all}
here=$(dirname "$(realpath "$0")")
top=$(realpath "$here/../..")
work=$build/kernel-n-$scen
results=$build/results
out=$results/kernel-n-$scen.txt
mkdir -p "$work" "$results"
fail_setup() { echo "run-n.sh: $*" >&2; echo "kernelN ${scen}_setup 0 1" >>"$out"; exit 1; }

# The guests' segment: a bridge and a tap per guest in a network namespace
# of this run's own (nothing reaches the host's network, no multicast).
if [ "${SCILAN_RUN_N_NETNS:-}" != inside ]; then
	: >"$out"
	unshare --net true 2>/dev/null || fail_setup "cannot make a network namespace (unshare --net, as root)"
	exec unshare --net env SCILAN_RUN_N_NETNS=inside "$0" "$@"
fi
: >"$out"
case "$scen" in all | scale | redis | bench | benchconns) ;; *) fail_setup "unknown scenario $scen" ;; esac
[ "$nodes" -ge 2 ] && [ "$nodes" -le 9 ] || fail_setup "N must be 2..9"
[ "$scen" != redis ] || [ "$nodes" = 4 ] || fail_setup "the redis scenario runs on 4 guests"
ip link set lo up
ip link add br0 type bridge forward_delay 0 && ip link set br0 up || fail_setup "no bridge"
for i in $(seq 0 $((nodes - 1))); do
	ip tuntap add tap$i mode tap && ip link set tap$i master br0 && ip link set tap$i up ||
		fail_setup "no tap$i (/dev/net/tun)"
done

. "$here/guest_lib.sh"
guest_kernel

# The server and the initramfs (busybox, virtio-net, ntb.ko, scilan.ko, the
# barrier, the mesh program with its libraries and libscilan_preload.so).
server=$work/ivshmem_server
guest_root_base "$work/root" "$server"
gcc -static -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -o "$work/root/bin/sln_bar" "$here/sln_bar.c" ||
	fail_setup "sln_bar build"
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/include" -I"$here" \
	-o "$work/root/bin/mesh" "$here/mesh.c" || fail_setup "mesh build"
cp "$build/lib/libscilan_preload.so" "$work/root/lib/" || fail_setup "no libscilan_preload.so (make hook)"
guest_copy_libs "$work/root" "$work/root/bin/mesh" "$build/lib/libscilan_preload.so"
# The benches' program (under the hook for scilan, alone for kernel TCP).
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/include" -I"$here" \
	-o "$work/root/bin/nbench" "$here/nbench.c" || fail_setup "nbench build"
guest_copy_libs "$work/root" "$work/root/bin/nbench"
# "redis": Debian's redis-server, redis-cli and redis-benchmark with their
# libraries, the scenario's script (init-n sources it), and inet_diag and
# tcp_diag: the hook asks sock_diag for a local client's socket (a master's
# redis-cli redirected to its own guest's server, over shm), and a guest
# without modprobe cannot load them on demand.
if [ "$scen" = redis ]; then
	cp "$mods/net/ipv4/inet_diag.ko" "$mods/net/ipv4/tcp_diag.ko" "$work/root/lib/" || fail_setup "no $mods/net/ipv4/tcp_diag.ko"
	for p in redis-server redis-cli redis-benchmark; do
		cp -L "$(command -v $p)" "$work/root/bin/$p" || fail_setup "no $p (apt-get install redis-server redis-tools)"
		guest_copy_libs "$work/root" "$work/root/bin/$p"
	done
	install -m 644 "$here/redis-cluster.sh" "$work/root/bin/redis-cluster.sh"
fi
install -m 755 "$here/init-n" "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

# 16 MiB of shared memory give each ordered pair of 4 guests a window of
# 20 slices; "scale" needs 1,024 slices each way (64 MiB per pair).
[ "$scen" = scale ] && shm=256M || shm=16M
[ "$scen" = benchconns ] && shm=256M
sock=$work/ivshmem.sock
rm -f "$sock"
"$server" -S "$sock" -l $shm -n 2 -v 2>"$work/server.log" &
spid=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { kill $spid; fail_setup "the ivshmem server did not start"; }

# Parallel TCG (thread=multi, maxcpus=2) for the cross-guest atomics, as in
# run-two.sh; the guests' memory kept small (4 of them on 2 host vCPUs).
accel="-accel tcg,thread=multi"
if [ "${SCILAN_QEMU_ACCEL:-tcg}" = kvm ] && [ -w /dev/kvm ]; then accel="-enable-kvm -cpu host"; fi
[ "$scen" = scale ] && mem=512 || mem=320
[ "$scen" = benchconns ] && mem=512
guest() { # index
	timeout 900 qemu-system-x86_64 $accel -m $mem -smp 1,maxcpus=2 -nographic -no-reboot \
		-kernel "$kernel" -initrd "$work/initramfs.gz" \
		-append "console=ttyS0 panic=-1 loglevel=6 scilan_n=$nodes scilan_scen=$scen ${SCILAN_GUEST_APPEND:-}" \
		-chardev socket,path="$sock",id=ivsh -device ivshmem-doorbell,chardev=ivsh,vectors=2 \
		-netdev tap,id=n0,ifname=tap$1,script=no,downscript=no \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:4f:00:1$1 \
		>"$work/console-$1.log" 2>&1 </dev/null
	echo $? >"$work/qemu-$1.rc"
}
start=$(date +%s)
pids=
for i in $(seq 0 $((nodes - 1))); do
	guest $i &
	pids="$pids $!"
	sleep 1
done
wait $pids
end=$(date +%s)
kill $spid 2>/dev/null
wait $spid 2>/dev/null
echo "run-n.sh: $nodes guests ($scen) ran $((end - start)) s ($accel), qemu exit:$(cat "$work"/qemu-*.rc | tr '\n' ' ')"

passed=0 failed=0
count() { # name pass?
	if [ "$2" = 1 ]; then echo "kernelN $1 1 0" >>"$out"; passed=$((passed + 1));
	else echo "kernelN $1 0 1" >>"$out"; failed=$((failed + 1)); fi
}
# The tests each guest must report, by its ivshmem id (the last one is the
# victim of "all"'s kill round).
wanted() { # id
	if [ "$scen" = redis ]; then # masters 0-2 (2 powered off), client 3
		case "$1" in
		0 | 1) echo links_up server_up bus_accelerated keys_read reader_stats kill_links \
			kill_survivors_carried_on kill_bus_carried_on server_stats ;;
		2) echo links_up server_up bus_accelerated keys_read reader_stats kill_powered_off ;;
		*) echo links_up cluster_create cluster_state cluster_links benchmark benchmark_commands \
			benchmark_stats benchmark_bytes keys_written keys_spread keys_read_n0 keys_read_n1 \
			keys_read_n2 client_stats cut_benchmark cut_links_up keys_read_after_cut kill_links \
			kill_survivors_carried_on kill_victim_conns_ended ;;
		esac
		return
	fi
	case "$scen" in
	bench)
		echo links_up
		for s in $(seq 0 $((nodes - 1))); do
			[ "$s" = "$1" ] || echo rtt_$1_${s}_poll rtt_$1_${s}_irq rtt_$1_${s}_tcp
		done
		[ "$1" = 0 ] && echo fanin_poll fanin_pollnm fanin_irq fanin_tcp rtt_0_1_pollnm ||
			echo fanin_poll_src fanin_pollnm_src fanin_irq_src fanin_tcp_src
		return ;;
	benchconns)
		echo links_up
		[ "$1" = 0 ] && echo conns_poll_1024 conns_poll_1 conns_irq_1024 conns_irq_1 conns_tcp_1024 conns_tcp_1
		return ;;
	esac
	if [ "$scen" = scale ]; then
		echo links_up scale_accelerated scale_streams scale_past_resources_plain scale_stats
		return
	fi
	echo links_up irq_accelerated irq_streams irq_stats poll_accelerated poll_streams poll_stats kill_accelerated
	if [ "$1" = $((nodes - 1)) ]; then
		echo kill_powered_off
	else
		echo kill_streams kill_stats kill_victim_conns_ended kill_survivors_carried_on kill_links
	fi
}
for i in $(seq 0 $((nodes - 1))); do
	log=$work/console-$i.log
	id=$(tr -d '\r' <"$log" | sed -n 's/^scilan-guest: id \([0-9]*\) .*/\1/p' | head -n 1)
	r=${scen}_n${id:-x$i}
	tr -d '\r' <"$log" | grep -aE '^TEST |scilan-guest|^mesh:' | sed "s/^/[$r] /"
	while read -r _ name verdict _; do
		[ "$verdict" = PASS ] && count "${r}_$name" 1 || count "${r}_$name" 0
	done < <(tr -d '\r' <"$log" | grep -aE '^TEST [A-Za-z0-9_]+ (PASS|FAIL)')
	guest_fail_details "$log" "kernel-n-$r" "$results"
	if grep -aqE 'Oops|WARNING:|(^|[^A-Z])BUG:|general protection|Call Trace|Kernel panic' "$log"; then
		echo "run-n.sh: kernel problems in guest $r's log:"
		grep -aE -A20 'Oops|WARNING:|(^|[^A-Z])BUG:|general protection|Kernel panic' "$log" | head -60
		count "${r}_guest_log_clean" 0
	else
		count "${r}_guest_log_clean" 1
	fi
	grep -aq 'scilan-guest: done' "$log" && count "${r}_guest_finished" 1 ||
		{ echo "run-n.sh: guest $r did not finish; log: $log"; count "${r}_guest_finished" 0; }
	[ -n "$id" ] || continue
	for t in $(wanted "$id"); do
		grep -q "^kernelN ${r}_$t " "$out" || { echo "run-n.sh: no result for ${r}_$t"; count "${r}_${t}_reported" 0; }
	done
done
echo "kernelN ($scen, $nodes guests): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
