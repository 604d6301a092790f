#!/bin/bash
# run.sh BUILD — `make test-kernel`: builds the guest initramfs (busybox-static,
# ntb.ko, ntb_mock.ko, scilan.ko, sltest, mptest, ...), boots Debian's kernel
# in QEMU under a timeout, and turns the console log into "kernel <test> <passed> <failed>"
# lines in BUILD/results/kernel.txt.  Any Oops/WARNING/BUG fails the suite.
set -u
build=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
top=$(realpath "$here/../..")
work=$build/kernel-test
results=$build/results
mkdir -p "$work" "$results"
: >"$results/kernel.txt"
. "$here/guest_lib.sh"

kernel=$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
kver=${kernel#/boot/vmlinuz-}
drv=$build/driver
modver=$(modinfo -F vermagic "$drv/scilan/scilan.ko" | cut -d' ' -f1)
if [ "$modver" != "$kver" ]; then
	echo "run.sh: modules are built for $modver, the guest kernel is $kver" >&2
	echo "kernel setup 0 1" >>"$results/kernel.txt"
	exit 1
fi

# The initramfs.
rm -rf "$work/root"
mkdir -p "$work/root"/{bin,lib,proc,sys,dev,tmp}
cp /bin/busybox "$work/root/bin/busybox"
cp "$drv/ntb/ntb.ko" "$drv/ntb_mock/ntb_mock.ko" "$drv/scilan/scilan.ko" "$work/root/lib/"
gcc -static -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/src" -I"$top/driver" \
	-o "$work/root/bin/sltest" "$here/sltest.c" "$here/sltest_ring.c" "$here/sltest_hostile.c" \
	"$here/sltest_lifetime.c" "$here/sltest_link.c" "$here/sltest_sets.c" ||
	{ echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# devlate: the driver's late connects (ABI 8) by hand.
gcc -static -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/driver" \
	-o "$work/root/bin/devlate" "$here/devlate.c" ||
	{ echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# mptest: the 8-port IDT-like mock (ntb_mock ports=8): 56 links, all to all, one port cut.
gcc -static -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/src" -I"$top/driver" \
	-o "$work/root/bin/mptest" "$here/mptest.c" ||
	{ echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# devtest: libscilan's device fabric through the native API (libscilan built in, static).
gcc -static -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -pthread -I"$top/libscilan/include" \
	-I"$top/libscilan/src" -I"$top/driver" -o "$work/root/bin/devtest" "$here/devtest.c" $(find "$top/libscilan/src" -name '*.c') ||
	{ echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# devsec: who may take a port's device connections (a second uid), and listeners told apart.
gcc -static -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -pthread -I"$top/libscilan/include" \
	-I"$top/libscilan/src" -I"$top/driver" -o "$work/root/bin/devsec" "$here/devsec.c" $(find "$top/libscilan/src" -name '*.c') ||
	{ echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# An unmodified, dynamically linked program under the preload hook: tests/hook/progs/peer
# with its shared libraries and libscilan_preload.so.
gcc -std=gnu11 -O2 -D_GNU_SOURCE -pthread -I"$top/tests/hook/progs" -o "$work/root/bin/peer" \
	"$top/tests/hook/progs/peer.c" "$top/tests/hook/progs/scen.c" ||
	{ echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# linkcut: the link cut under a plain POSIX program under the hook.
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/include" -pthread -o "$work/root/bin/linkcut" \
	"$here/linkcut.c" || { echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# linkback: the link cut and restored under the hook: the same connection back on the rings.
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/include" -o "$work/root/bin/linkback" \
	"$here/linkback.c" || { echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# forkexec: a CGI-style fork+exec of a helper under the hook.
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -I"$top/libscilan/include" -o "$work/root/bin/forkexec" \
	"$here/forkexec.c" || { echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
# epollset: epoll sets over the device fabric under the hook (the set's event queue).
gcc -std=gnu11 -Wall -Wextra -Werror -O2 -D_GNU_SOURCE -pthread -I"$top/libscilan/include" -o "$work/root/bin/epollset" \
	"$here/epollset.c" || { echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
cp "$build/lib/libscilan_preload.so" "$work/root/lib/" ||
	{ echo "kernel setup 0 1" >>"$results/kernel.txt"; exit 1; }
for lib in $(ldd "$work/root/bin/peer" "$work/root/bin/linkcut" "$work/root/bin/forkexec" "$work/root/bin/epollset" "$build/lib/libscilan_preload.so" | grep -o '/[^ :]*' | sort -u); do
	mkdir -p "$work/root$(dirname "$lib")"
	cp -L "$lib" "$work/root$lib"
done
install -m 755 "$here/init" "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

# TCG by default: /dev/kvm exists on this (nested) host, but a KVM guest hangs
# right after the kernel is decompressed.  SCILAN_QEMU_ACCEL=kvm opts in.
accel="-accel tcg,thread=multi"
if [ "${SCILAN_QEMU_ACCEL:-tcg}" = kvm ] && [ -w /dev/kvm ]; then accel="-enable-kvm -cpu host"; fi
log=$work/console.log
start=$(date +%s)
# Eight pci-testdev functions: the pair uses the first two, the 8-port
# switch (mptest) all of them.
testdevs=$(printf -- '-device pci-testdev %.0s' 1 2 3 4 5 6 7 8)
timeout 600 qemu-system-x86_64 $accel -m 1024 -smp 2 -nographic -no-reboot -nic none \
	-kernel "$kernel" -initrd "$work/initramfs.gz" \
	-append "console=ttyS0 panic=-1 loglevel=7${SCILAN_GUEST_ONLY:+ scilan_only=$SCILAN_GUEST_ONLY}${SCILAN_SLTEST:+ scilan_sltest=$SCILAN_SLTEST}" \
	$testdevs >"$log" 2>&1 </dev/null
rc=$?
end=$(date +%s)
tr -d '\r' <"$log" | grep -aE '^TEST |scilan-guest' 
echo "run.sh: guest ran $((end - start)) s ($accel), qemu exit $rc"

passed=0 failed=0
while read -r _ name verdict _; do
	if [ "$verdict" = PASS ]; then
		echo "kernel $name 1 0" >>"$results/kernel.txt"
		passed=$((passed + 1))
	else
		echo "kernel $name 0 1" >>"$results/kernel.txt"
		failed=$((failed + 1))
	fi
done < <(tr -d '\r' <"$log" | grep -aE '^TEST [A-Za-z0-9_]+ (PASS|FAIL)')
guest_fail_details "$log" kernel1 "$results"

# scilan_ctl status against the state files the guest printed, and its error
# when there is no driver.
ctl=$build/bin/scilan_ctl
if [ -x "$ctl" ]; then
	rm -rf "$work/state"
	tr -d '\r' <"$log" | grep -a '^STATE ' | while read -r _ l rest; do
		mkdir -p "$work/state/$l"
		echo "$rest" >>"$work/state/$l/state"
	done
	out=$(SCILAN_DRIVER_STATE=$work/state "$ctl" --json status 2>&1)
	txt=$(SCILAN_DRIVER_STATE=$work/state "$ctl" status 2>&1)
	err=$(SCILAN_DRIVER_STATE=$work/none SCILAN_DEV_DIR=$work/none "$ctl" status 2>&1)
	erc=$?
	echo "$txt"
	if [[ $out == '{"driver":"scilan","links":[{"name":"scilan0","link":"up",'* &&
		$out == *'"endpoints":1,"endpoint_list":[{"id":'*'"state":"idle"'* &&
		$out == *'{"name":"scilan1","link":"up",'* && $txt == *scilan1* &&
		$out == *'"listener_list":[{"id":'*',"uid":0,"family":"ipv4","addr":"0.0.0.0","port":13,"netns":'* &&
		$txt == *"listener"*"uid 0"*"ipv4 0.0.0.0 port 13 netns"* &&
		$erc -eq 1 && $err == *"cannot read driver state"* ]]; then
		echo "TEST ctl_status PASS"
		echo "kernel ctl_status 1 0" >>"$results/kernel.txt"
		passed=$((passed + 1))
	else
		echo "TEST ctl_status FAIL: $out / $err ($erc)"
		echo "kernel ctl_status 0 1" >>"$results/kernel.txt"
		failed=$((failed + 1))
	fi
fi

problems=$(grep -acE 'Oops|WARNING:|(^|[^A-Z])BUG:|general protection|Call Trace|Kernel panic' "$log")
if [ "$problems" -ne 0 ]; then
	echo "run.sh: kernel problems in the guest log:"
	grep -aE -A20 'Oops|WARNING:|(^|[^A-Z])BUG:|general protection|Kernel panic' "$log" | head -60
	echo "kernel guest_log_clean 0 1" >>"$results/kernel.txt"
	failed=$((failed + 1))
else
	echo "kernel guest_log_clean 1 0" >>"$results/kernel.txt"
	passed=$((passed + 1))
fi
if ! grep -aq 'scilan-guest: done' "$log"; then
	echo "run.sh: the guest did not finish (timeout or crash); log: $log"
	echo "kernel guest_finished 0 1" >>"$results/kernel.txt"
	failed=$((failed + 1))
fi
echo "kernel: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
