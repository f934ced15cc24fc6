#!/usr/bin/env bash
# Checks packaging/zeroclaw-bridge.env.example against the binary's own -h:
# every "#NAME=value" line must name a setting the binary has, with the
# default the binary has ("default unset" is an empty value). Run it after a
# change of config.go's defaults; CI runs it on the release binary.
#
#   scripts/check-env-example.sh [BINARY]     (default: go run ./cmd/zeroclaw-bridge)
set -euo pipefail
cd "$(dirname "$0")/.."
example=packaging/zeroclaw-bridge.env.example

if [ $# -ge 1 ]; then
  help="$("$1" -h)"
else
  help="$(go run ./cmd/zeroclaw-bridge -h)"
fi

# "(env NAME, default VALUE)" -> "NAME<TAB>VALUE", "unset" -> "".
defaults="$(printf '%s\n' "$help" | sed -n 's/^[[:space:]]*(env \([A-Z0-9_]*\), default \(.*\))$/\1\t\2/p' |
  awk -F'\t' '{ v = $2; if (v == "unset") v = ""; print $1 "\t" v }')"
[ -n "$defaults" ] || { echo "check-env-example: no '(env NAME, default X)' lines in -h" >&2; exit 1; }

bad=0 n=0
while IFS= read -r line; do
  case "$line" in
    '#'[A-Z]*=*) ;;
    *) continue ;;
  esac
  assignment="${line#\#}"
  name="${assignment%%=*}"
  value="${assignment#*=}"
  case "$name" in *[!A-Z0-9_]*) continue ;; esac # prose, not a setting
  case "$value" in
    \"*\") value="${value#\"}" value="${value%\"}" ;;
    \'*\') value="${value#\'}" value="${value%\'}" ;;
  esac
  n=$((n + 1))
  want="$(printf '%s\n' "$defaults" | awk -F'\t' -v k="$name" '$1 == k { print $2; found = 1 } END { exit !found }')" || {
    echo "check-env-example: $example: $name is not a setting of the binary (-h)" >&2
    bad=1
    continue
  }
  if [ "$value" != "$want" ]; then
    echo "check-env-example: $example: $name=$value, but the binary's default is '$want'" >&2
    bad=1
  fi
done <"$example"
[ "$bad" -eq 0 ] || exit 1
echo "check-env-example: $n settings match the binary's defaults"
