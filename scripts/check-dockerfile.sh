#!/usr/bin/env bash
# Lints the Dockerfile. With hadolint on PATH, hadolint does it (Debian has
# no package of it; CI runs this script's own checks instead). The own
# checks are the hadolint rules that apply to this file, plus what the
# bridge needs:
#   DL3006/DL3007 every FROM names a tag (ARG defaults resolved), never :latest
#   DL3002        the last USER is not root
#   DL3020        COPY, not ADD
#   DL3025        CMD, ENTRYPOINT and HEALTHCHECK CMD in JSON (exec) form
#   DL3014/DL3015 apt-get install with -y and --no-install-recommends
#   DL3009        apt lists removed in the RUN that apt-get update is in
#   DL4006        a RUN with a pipe runs under SHELL ... -o pipefail
#   DL3003/DL3004/DL3027/DL4000  no cd (WORKDIR), no sudo, no apt, no MAINTAINER
#   bridge        STOPSIGNAL SIGTERM, EXPOSE 8080, a HEALTHCHECK, a VOLUME
#
#   scripts/check-dockerfile.sh [Dockerfile]
set -euo pipefail
cd "$(dirname "$0")/.."
file="${1:-Dockerfile}"

if command -v hadolint >/dev/null 2>&1; then
  hadolint "$file"
  echo "check-dockerfile: hadolint: $file is clean"
  exit 0
fi

# One instruction a line: continuations joined, comments dropped.
flat="$(awk '
  /^[ \t]*#/ && buf == "" { next }
  {
    line = $0
    if (buf != "" && line ~ /^[ \t]*#/) next
    if (line ~ /\\$/) { buf = buf substr(line, 1, length(line) - 1) " "; next }
    print buf line; buf = ""
  }
  END { if (buf != "") print buf }' "$file" | sed '/^[[:space:]]*$/d')"

bad=0
problem() { echo "check-dockerfile: $file: $*" >&2; bad=1; }

declare -A args=() stages=()
pipefail=false
user=""
while IFS= read -r line; do
  instr="$(printf '%s' "$line" | awk '{ print toupper($1) }')"
  rest="$(printf '%s' "$line" | sed 's/^[[:space:]]*[A-Za-z]*[[:space:]]*//')"
  case "$instr" in
    ARG)
      if [[ "$rest" == *=* ]]; then args["${rest%%=*}"]="${rest#*=}"; fi
      ;;
    FROM)
      image="$(printf '%s' "$rest" | sed 's/--platform=[^ ]*[[:space:]]*//' | awk '{ print $1 }')"
      while [[ "$image" =~ \$\{?([A-Za-z_][A-Za-z0-9_]*)\}? ]]; do
        name="${BASH_REMATCH[1]}"
        [ -n "${args[$name]+x}" ] || { problem "FROM $image: ARG $name has no default"; break; }
        image="${image/${BASH_REMATCH[0]}/${args[$name]}}"
      done
      case "$image" in
        scratch) ;;
        *@sha256:*) ;;
        *:latest) problem "DL3007: FROM $image uses :latest" ;;
        */*:* | *:*) [[ "${image##*/}" == *:* ]] || problem "DL3006: FROM $image has no tag" ;;
        *) [ -n "${stages[$image]+x}" ] || problem "DL3006: FROM $image has no tag" ;;
      esac
      stage="$(printf '%s' "$rest" | awk 'toupper($(NF-1)) == "AS" { print $NF }')"
      [ -z "$stage" ] || stages["$stage"]=1
      user=""
      ;;
    USER) user="$rest" ;;
    ADD) problem "DL3020: use COPY instead of ADD: $line" ;;
    MAINTAINER) problem "DL4000: MAINTAINER is deprecated" ;;
    SHELL) [[ "$rest" == *pipefail* ]] && pipefail=true ;;
    CMD | ENTRYPOINT) [[ "$rest" == \[* ]] || problem "DL3025: $instr is not in JSON form: $line" ;;
    HEALTHCHECK)
      cmd="$(printf '%s' "$rest" | sed 's/^.*CMD[[:space:]]*//')"
      [[ "$rest" == NONE* || "$cmd" == \[* ]] || problem "DL3025: HEALTHCHECK CMD is not in JSON form"
      ;;
    RUN)
      [[ "$rest" =~ (^|[^a-z-])cd[[:space:]] ]] && problem "DL3003: use WORKDIR, not cd: $line"
      [[ "$rest" == *sudo* ]] && problem "DL3004: no sudo: $line"
      [[ "$rest" =~ (^|[;&|[:space:]])apt[[:space:]] ]] && problem "DL3027: use apt-get, not apt: $line"
      if [[ "$rest" == *"apt-get install"* ]]; then
        [[ "$rest" == *"--no-install-recommends"* ]] || problem "DL3015: apt-get install without --no-install-recommends"
        [[ "$rest" =~ apt-get\ install[^\&\;]*\ -y ]] || [[ "$rest" =~ apt-get\ -y\ install ]] || problem "DL3014: apt-get install without -y"
      fi
      if [[ "$rest" == *"apt-get update"* ]] && [[ "$rest" != *"rm -rf /var/lib/apt/lists/"* ]]; then
        problem "DL3009: apt lists not removed in the RUN that updates them"
      fi
      if printf '%s' "$rest" | sed 's/||//g' | grep -q '|' && ! $pipefail; then
        problem "DL4006: RUN with a pipe but no SHELL [..., \"-o\", \"pipefail\", ...]: $line"
      fi
      ;;
  esac
done <<<"$flat"

case "$user" in
  "" | root | 0 | 0:* | root:*) problem "DL3002: the image runs as root (last USER: ${user:-none})" ;;
esac
grep -Eq '^STOPSIGNAL[[:space:]]+SIGTERM$' <<<"$flat" || problem "no STOPSIGNAL SIGTERM (the bridge's graceful stop)"
grep -Eq '^EXPOSE[[:space:]]+8080$' <<<"$flat" || problem "no EXPOSE 8080"
grep -Eq '^HEALTHCHECK[[:space:]]' <<<"$flat" || problem "no HEALTHCHECK"
grep -Eq '^VOLUME[[:space:]]' <<<"$flat" || problem "no VOLUME for the bridge's state"

[ "$bad" -eq 0 ] || exit 1
echo "check-dockerfile: $file passes the checks (hadolint is not installed; see the script for the rules)"
