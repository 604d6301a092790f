#!/usr/bin/env bash
# deps.sh — installs the Debian packages the build, tests and benches need,
# when run as root; otherwise prints the one apt-get line to run.
set -euo pipefail
packages=(gcc make libcriterion-dev pkg-config gnuplot-nox spin iproute2 procps libpci-dev libhwloc-dev pciutils clang-14 libclang-rt-14-dev liburing-dev mandoc jq)
exec "$(dirname "$0")/apt-missing.sh" "scilan" "${packages[@]}"
