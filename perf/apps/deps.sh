#!/usr/bin/env bash
# perf/apps/deps.sh — installs the missing Debian packages of the server
# benchmark (perf/apps/servers.sh, `make bench-apps`) as root; otherwise prints
# the apt-get line.  A package that cannot be had leaves its rows "skipped".
set -euo pipefail
# memcaslap is Debian's name for memaslap (libmemcached-tools); ab is in
# apache2-utils; php-fpm is the release's php-fpm (8.2 on Debian 12).
packages=(postgresql postgresql-client redis-server redis-tools memcached libmemcached-tools
	python3-gunicorn nginx-light php-fpm apache2-utils sockperf varnish gnuplot-nox util-linux
	iproute2 procps)
exec "$(dirname "$0")/../../scripts/apt-missing.sh" "scilan bench-apps" "${packages[@]}"
