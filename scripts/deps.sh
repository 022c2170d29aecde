#!/usr/bin/env bash
# deps.sh — installs the Debian packages Downpour needs. As root it runs apt-get;
# otherwise it prints the exact command and fails. --check-only only reports.
set -u
PKGS="build-essential pkg-config libev-dev libopenblas-dev zlib1g-dev libjansson-dev
libzstd-dev libinih-dev libsdl2-dev libcairo2-dev libpng-dev xvfb xauth x11-utils fonts-dejavu-core dataset-fashion-mnist python3 procps
libmicrohttpd-dev chromium libsodium-dev clang libclang-rt-14-dev curl
slurm-wlm munge valgrind iproute2"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    exit 0
fi
if [ "${1:-}" = "--check-only" ]; then
    echo "missing packages:$missing"
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "downpour: missing Debian packages:$missing" >&2
    echo "downpour: run: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "downpour: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null || { echo "downpour: apt-get update failed" >&2; exit 1; }
apt-get install -y -q $missing || { echo "downpour: apt-get install failed" >&2; exit 1; }
