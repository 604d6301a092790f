#!/usr/bin/env bash
# apt-missing.sh LABEL PACKAGE... — installs those of the Debian packages that
# are missing (as root; otherwise prints the one apt-get line to run and fails).
# The packages' daemons are not started: tests and benches start their own.
set -euo pipefail
label=$1
shift
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "$label: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "$label: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Other package runs may hold the dpkg lock: wait for it rather than fail.
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
# policy-rc.d 101: no daemon is started by the installation.
prc=/usr/sbin/policy-rc.d
if [ ! -e "$prc" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$prc"
	chmod 755 "$prc"
	trap 'rm -f "$prc"' EXIT
fi
apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
