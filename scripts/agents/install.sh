#!/usr/bin/env bash
# Installs the npm ACP agents that cmd/zeroclaw-bridge's TestRealAgents runs
# through the real binary (docs/agents.md), at the versions package.json and
# package-lock.json beside this script pin, into DIR: the first argument,
# else $ACP_AGENTS_DIR, else ~/.cache/zeroclaw-bridge-agents. Needs Node.js
# 20 or newer and npm. Does nothing when DIR already holds this lock's
# install. Package install scripts are not run: none of the agents needs
# one (codex-acp's binary is an optional dependency per platform).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-${ACP_AGENTS_DIR:-$HOME/.cache/zeroclaw-bridge-agents}}"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "agents: node and npm are needed (Node.js 20 or newer)" >&2
  exit 1
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "agents: Node.js $(node --version) is too old; gemini-cli needs 20 or newer" >&2
  exit 1
fi

mkdir -p "$dir"
stamp="$dir/.installed-lock.json"
if [ -d "$dir/node_modules" ] && cmp -s "$here/package-lock.json" "$stamp"; then
  echo "agents: up to date in $dir"
  exit 0
fi
rm -f "$stamp"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)

# codex-acp's launcher finds its binary in the platform's optional package.
if ! "$dir/node_modules/.bin/codex-acp" --help >/dev/null 2>&1; then
  echo "agents: codex-acp has no binary for $(uname -sm) in $dir" >&2
  exit 1
fi
cp "$here/package-lock.json" "$stamp"
echo "agents: installed in $dir:"
(cd "$dir" && npm ls --depth=0 2>/dev/null | tail -n +2)
