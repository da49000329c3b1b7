#!/usr/bin/env bash
# Installs the Debian packages lockwire needs, only those missing. Usage: scripts/deps.sh [extra-pkg...]
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
      libuv1-dev libssl-dev openssl libgtest-dev libgmock-dev libbenchmark-dev
      redis-server redis-tools libhiredis-dev
      nftables iproute2 "$@")  # nftables, iproute2: the partition tests (tests/partition)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
