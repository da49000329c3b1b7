#!/usr/bin/env bash
# The main demo: installs what is missing, builds, and decodes a sample RESP3 stream with respcat.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release
printf '%%2\r\n+server\r\n$5\r\nredis\r\n+proto\r\n:3\r\n>3\r\n$10\r\ninvalidate\r\n*1\r\n$13\r\nlock:{orders}\r\n|1\r\n+ttl\r\n:3000\r\n*2\r\n:42\r\n,3.25\r\n' \
  | build/release/bin/respcat
