#!/bin/sh
# deps.sh — installs what `make driver` and `make test-kernel` need (Debian's
# kernel headers, source, image, QEMU, busybox-static, and the redis programs
# run-n.sh copies into its guests), as root; waits for a dpkg lock held by
# another apt run rather than breaking it.
set -e
pkgs="linux-headers-amd64 linux-source linux-image-amd64 qemu-system-x86 busybox-static xz-utils redis-server redis-tools"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -q
apt-get -o DPkg::Lock::Timeout=600 install -y -q $missing
