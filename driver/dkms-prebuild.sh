#!/bin/sh
# dkms-prebuild.sh KERNEL_BUILD_DIR — for dkms: when the kernel was built
# without CONFIG_NTB, extract drivers/ntb/core.c from Debian's linux-source
# tarball into ntb/ so the same kbuild run builds ntb.ko beside scilan.ko.
set -e
kdir=$1
grep -qs '^CONFIG_NTB=[ym]' "$kdir/.config" && exit 0
tar=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
[ -n "$tar" ] || { echo "dkms-prebuild: install linux-source (CONFIG_NTB is off)" >&2; exit 1; }
mkdir -p ntb
tar -xJOf "$tar" --wildcards '*/drivers/ntb/core.c' >ntb/core.c
printf 'obj-m := ntb.o\nntb-y := core.o\n' >ntb/Kbuild
