#!/usr/bin/env bash
# run.sh BUILD RESULTS [SUITE...] — CPython's own socket test suites (Debian's
# libpython3.11-testsuite), run on kernel TCP and under scilan_run; every case
# that passes plainly must pass under the hook (compare.py, known-failures.txt).
set -u
build=$(realpath "$1") results=$(realpath -m "$2")
shift 2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3.11
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(test_socket test_selectors test_socketserver test_asyncio test_httplib
	test_urllib2_localnet test_ftplib test_xmlrpc test_wsgiref test_httpservers test_poplib test_ssl test_logging)

if ! dpkg-query -W -f='${Status}' libpython3.11-testsuite 2>/dev/null | grep -q 'install ok installed'; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "cpython: missing libpython3.11-testsuite; run: sudo apt-get install -y libpython3.11-testsuite" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 libpython3.11-testsuite >/dev/null ||
		{ apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 libpython3.11-testsuite >/dev/null; }
fi

mkdir -p "$results"
out=$results/cpython.txt
: >"$out"
work=$(mktemp -d /tmp/scilan-cpython.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
for suite in "${suites[@]}"; do
	# No vsock on these VMs: its cases wait for a peer that never comes.
	args=(-m test -u network --timeout 300 --junit-xml)
	ignore=()
	[ "$suite" = test_socket ] && ignore=(-i '*VSOCK*')
	for mode in plain hooked; do
		dir=$work/$suite-$mode
		mkdir -p "$dir/rundir" && chmod 700 "$dir/rundir"
		launcher=()
		[ $mode = hooked ] && launcher=(env SCILAN_RUNDIR="$dir/rundir" SCILAN_CONF=/dev/null "$build/bin/scilan_run" --stats="$dir/stats")
		(cd "$dir" && timeout -k 10 900 "${launcher[@]}" "$py" "${args[@]}" "$dir/report.xml" "${ignore[@]}" "$suite" \
			>"$dir/log" 2>&1)
	done
	echo "== [cpython] $suite"
	if [ ! -s "$work/$suite-plain/report.xml" ]; then
		echo "cpython: $suite: the plain run wrote no report"; tail -20 "$work/$suite-plain/log"
		echo "cpython $suite 0 1" >>"$out"; status=1; continue
	fi
	if [ ! -s "$work/$suite-hooked/report.xml" ]; then
		echo "cpython: $suite: the run under scilan_run wrote no report (crash or hang)"; tail -20 "$work/$suite-hooked/log"
		echo "cpython $suite 0 1" >>"$out"; status=1; continue
	fi
	verdict=$("$py" "$here/compare.py" "$suite" "$work/$suite-plain/report.xml" "$work/$suite-hooked/report.xml" \
		"$here/known-failures.txt")
	printf '%s\n' "$verdict"
	line=$(tail -n 1 <<<"$verdict")
	# Their own file: a test that reads a child's stderr must not find them.
	grep -a 'accelerated' "$work/$suite-hooked/stats" 2>/dev/null | awk -v s="$suite" '
		{ for (i = 1; i < NF; i++) if ($i == "accelerated") a += $(i + 1) } END { printf "cpython: %s: %d connections accelerated\n", s, a }'
	passed=$(sed -n 's/.*: \([0-9]*\) passed.*/\1/p' <<<"$line")
	failed=$(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$line")
	echo "cpython $suite ${passed:-0} ${failed:-1}" >>"$out"
	[ "${failed:-1}" -eq 0 ] || status=1
done
exit $status
