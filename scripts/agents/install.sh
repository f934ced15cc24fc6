#!/usr/bin/env bash
# Installs the npm ACP agents that cmd/internal/bridgeapp's TestRealAgents runs
# through the real binary (docs/agents.md), at the versions package.json and
# package-lock.json beside this script pin.
#
#   scripts/agents/install.sh [--print-dir] [BASE]
#
# The install goes to BASE/<the first 12 hex digits of package-lock.json's
# SHA-256> (BASE: the argument, else ~/.cache/zeroclaw-bridge-agents), so
# every checkout and CI run with the same lock shares one install and one
# with another lock gets its own: an install is made in a temporary
# directory beside it and renamed into place when complete, and never
# modified afterwards, so a test running on it is never disturbed. When the
# directory is there already, nothing is installed. The directory is printed
# on the last line of stdout (everything else goes to stderr); ACP_AGENTS_DIR
# names it for the tests:
#
#   export ACP_AGENTS_DIR="$(scripts/agents/install.sh)"
#
# --print-dir prints the directory and installs nothing. Of the keyed
# directories under BASE the two used last are kept, older ones deleted.
# Needs Node.js 20 or newer and npm. Package install scripts are not run:
# none of the agents needs one (codex-acp's binary is an optional dependency
# per platform).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
log() { echo "agents: $*" >&2; }

print_dir=false
if [ "${1:-}" = --print-dir ]; then
  print_dir=true
  shift
fi
if [ $# -gt 1 ] || [[ "${1:-}" == -* ]]; then
  log "usage: $0 [--print-dir] [BASE]"
  exit 2
fi
base="${1:-}"
if [ -z "$base" ]; then
  home="${HOME:-}"
  if [ -z "$home" ]; then
    home="$(getent passwd "$(id -u)" | cut -d: -f6)"
    if [ -z "$home" ]; then
      log "HOME is unset and user id $(id -u) has no home in the password database: give BASE"
      exit 2
    fi
    export HOME="$home" # npm keeps its cache under it
  fi
  base="$home/.cache/zeroclaw-bridge-agents"
fi
key="$(sha256sum <"$here/package-lock.json" | cut -c1-12)"
dir="$base/$key"
if $print_dir; then
  echo "$dir"
  exit 0
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  log "Node.js 20 or newer and npm are needed, and node or npm is not on PATH"
  exit 1
fi
major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || true)"
if ! [[ "$major" =~ ^[0-9]+$ ]] || [ "$major" -lt 20 ]; then
  log "Node.js $(node --version 2>/dev/null || echo '(no version)') is too old: gemini-cli needs 20 or newer"
  exit 1
fi

mkdir -p "$base"
if [ -d "$dir" ]; then
  log "up to date in $dir"
else
  # A temporary directory beside it: the same file system, so the rename
  # is atomic.
  new="$(mktemp -d "$base/.new-$key.XXXXXX")"
  trap 'rm -rf "$new"' EXIT
  cp "$here/package.json" "$here/package-lock.json" "$new/"
  (cd "$new" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
  # codex-acp's launcher finds its binary in the platform's optional package.
  if ! "$new/node_modules/.bin/codex-acp" --help >/dev/null 2>&1; then
    log "codex-acp has no binary for $(uname -sm)"
    exit 1
  fi
  chmod 0755 "$new"
  # Another run may have put the same install in place meanwhile: then
  # that one stays, and this one goes.
  if mv -T "$new" "$dir" 2>/dev/null; then
    trap - EXIT
    log "installed in $dir:"
    (cd "$dir" && npm ls --depth=0 2>/dev/null | tail -n +2) >&2 || true
  elif [ -d "$dir" ]; then
    log "installed by another run meanwhile in $dir"
  else
    log "cannot move $new to $dir"
    exit 1
  fi
fi
# The directory's time says when it was used last; the two newest stay.
touch "$dir"
find "$base" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex '.*/[0-9a-f]{12}' -printf '%T@ %p\n' |
  sort -rn | tail -n +3 | cut -d' ' -f2- | while IFS= read -r old; do
  log "deleting $old (an install of another package-lock.json, not used lately)"
  rm -rf "$old"
done
# A temporary directory left by a killed run goes after a day.
find "$base" -mindepth 1 -maxdepth 1 -type d -name '.new-*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
if [ -e "$base/node_modules" ]; then
  log "$base/node_modules is an install of an older install.sh: delete it (and $base/package*.json, $base/.installed-lock.json) once no test uses it"
fi
echo "$dir"
