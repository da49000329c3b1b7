#!/usr/bin/env bash
# The main demo: installs what is missing, builds, then
#  1. decodes a sample RESP3 stream with respcat, and
#  2. replays named lock races on the embedded deterministic simulator, first with a deliberately
#     broken client strategy (the race happens: a checker fires) and then with lockwire (prevented).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release
bin=build/release/bin

echo "== respcat: a RESP3 stream (map, tracking push, attribute, array) =="
printf '%%2\r\n+server\r\n$5\r\nredis\r\n+proto\r\n:3\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$13\r\nlock:{orders}\r\n|1\r\n+ttl\r\n:3000\r\n*2\r\n:42\r\n,3.25\r\n' \
  | "$bin/respcat"

replay() {  # scenario broken-strategy
  echo
  echo "== race '$1': broken strategy '$2' =="
  "$bin/lockwire-sim" replay "$1" --strategy "$2" || true   # exit 1: a checker fired, as it must
  echo "== race '$1': lockwire =="
  "$bin/lockwire-sim" replay "$1"                            # exit 0: every checker passes
}
replay delete-wrong-lock get-then-del
replay wait-deadline-during-command give-up-on-deadline
replay pause-beyond-ttl no-fencing
replay notify-before-subscribe no-recheck
replay split-brain-reconnect no-fence
echo
echo "All scenarios: $bin/lockwire-sim list"
