#!/usr/bin/env bash
# Each man page must mention every option and command its tool's own usage text prints, and
# render without groff warnings. Usage: man_pages_test.sh BIN_DIR MAN_DIR
set -euo pipefail
bin=$1
man=$2
fail=0

# usage TOOL: every usage text the tool prints (--help, and each subcommand's usage).
usage() {
  case $1 in
    lockwire) "$bin/lockwire" --help ;;
    respcat) "$bin/respcat" --help ;;
    lockwire-sim)
      "$bin/lockwire-sim" --help
      # Subcommands print their usage on a bad argument (exit 2).
      for c in serve explore replay list; do "$bin/lockwire-sim" "$c" --no-such-option 2>&1 || true; done ;;
  esac
}

for tool in lockwire lockwire-sim respcat; do
  page=$man/$tool.1
  warnings=$(groff -man -ww -z "$page" 2>&1 || true)
  if [ -n "$warnings" ]; then
    echo "$page: groff warnings:"; echo "$warnings"; fail=1
  fi
  text=$(groff -man -Tascii -P-cbou "$page" 2>/dev/null)
  help=$(usage "$tool" | grep -v 'bad or incomplete argument')
  # Options (--long, -x) and, for the tools with commands, the command names.
  words=$(grep -oE '(^|[ [,|])--?[a-z][a-z-]*' <<<"$help" | sed 's/^[ [,|]//' | sort -u)
  if [ "$tool" != respcat ]; then
    words+=$'\n'$(grep -oE '^  [a-z][a-z-]+( |$)' <<<"$help" | tr -d ' ' | sort -u)
  fi
  [ "$tool" = lockwire-sim ] &&
    words+=$'\n'$(grep -A2 'faults:' <<<"$help" | grep -oE '[a-z]+(-[a-z]+)*' | grep -vE '^(faults|server|conditions|swarm|seeds|from|on|draw|them|or|name|with|profile)$')
  n=0
  missing=0
  while read -r w; do
    [ -z "$w" ] && continue
    [ "$w" = --no-such-option ] && continue
    n=$((n + 1))
    if ! grep -qF -- "$w" <<<"$text"; then
      echo "$page: '$w' (from $tool's usage) is not in the man page"; missing=1
    fi
  done <<<"$words"
  [ "$n" -ge 3 ] || { echo "$tool: only $n words taken from its usage: the extraction broke"; fail=1; }
  if [ "$missing" = 0 ]; then echo "$tool: $n options/commands from its usage, all in $tool.1"; else fail=1; fi
done
exit "$fail"
