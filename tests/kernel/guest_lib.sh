# guest_lib.sh — what the ivshmem guest suites (run-two.sh, run-n.sh) share:
# the guest kernel matching the built modules, the initramfs base (busybox,
# virtio-net, ntb.ko, scilan.ko, our ivshmem server), copying a program's
# shared libraries into it, and the failed tests' lines for the summary.
# Sourced; the caller defines build, here and fail_setup.

# Sets kernel, kver, mods, drv: Debian's newest kernel, which the modules
# must have been built for.
guest_kernel() {
	kernel=$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
	kver=${kernel#/boot/vmlinuz-}
	mods=/lib/modules/$kver/kernel
	drv=$build/driver
	local modver
	modver=$(modinfo -F vermagic "$drv/scilan/scilan.ko" | cut -d' ' -f1)
	[ "$modver" = "$kver" ] || fail_setup "modules are built for $modver, the guest kernel is $kver"
}

# guest_root_base ROOT SERVER: a fresh ROOT with busybox, ntb.ko, scilan.ko
# and virtio-net's modules in /lib; our ivshmem server built at SERVER.
guest_root_base() {
	local root=$1 m
	gcc -std=c11 -Wall -Wextra -Werror -O2 -o "$2" "$here/ivshmem_server.c" || fail_setup "ivshmem_server build"
	rm -rf "$root"
	mkdir -p "$root"/{bin,lib,proc,sys,dev,tmp}
	cp /bin/busybox "$root/bin/busybox"
	cp "$drv/ntb/ntb.ko" "$drv/scilan/scilan.ko" "$root/lib/"
	for m in drivers/virtio/virtio drivers/virtio/virtio_ring drivers/virtio/virtio_pci_legacy_dev \
		drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci net/core/failover \
		drivers/net/net_failover drivers/net/virtio_net; do
		cp "$mods/$m.ko" "$root/lib/" || fail_setup "no $mods/$m.ko"
	done
}

# guest_copy_libs ROOT FILE...: the shared libraries the files need, at
# their own paths under ROOT.
guest_copy_libs() {
	local root=$1 lib
	shift
	for lib in $(ldd "$@" | grep -o '/[^ ]*' | grep -v ':$' | sort -u); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

# guest_fail_details LOG LABEL RESULTS: each failing TEST line of a guest's
# console log with the lines around it that say what went wrong (failures,
# errors, resets, the statistics lines): those since the TEST line before
# it (a program's own output comes first) and those after it (sl2test shows
# its files after its verdict), one file per test under RESULTS/details
# (scripts/test-summary.sh repeats them at the end of `make test`, where a
# CI log's tail shows them).
guest_fail_details() {
	mkdir -p "$3/details"
	rm -f "$3/details/$2-"*.txt
	tr -d '\r' <"$1" | awk -v label="$2" -v dir="$3/details" '
		function telling() {
			return !/ failed over after / &&
			       /FAIL|[Ff]ail|[Ee]rror|[Rr]eset|refused|timed out|fallback reasons|accelerated [0-9]/
		}
		/^TEST [A-Za-z0-9_]+ FAIL/ {
			if (f != "") close(f)
			f = dir "/" label "-" $2 ".txt"; n = 0; print > f
			for (i = 0; i < nb; i++) print "  (before) " before[i] > f
			nb = 0; next
		}
		/^TEST / { if (f != "") close(f); f = ""; nb = 0; next }
		!telling() { next }
		f != "" && n < 20 { print > f; n++; next }
		nb < 10 { before[nb++] = $0 }'
}
