#!/usr/bin/env bash
# Smoke test of one zeroclaw-bridge binary, optionally run through an
# emulator: `version` names the expected platform, then a real start with
# the built-in demo agent on 127.0.0.1 and a free port, every file it writes
# in a temporary directory, a /health and a /api/message round trip, then
# SIGTERM and a clean exit (status 0, "stopped" logged).
#
#   scripts/smoke-binary.sh BINARY PLATFORM [RUNNER...]
#   scripts/smoke-binary.sh dist/x/zeroclaw-bridge linux/arm64 qemu-aarch64-static
#
# With a RUNNER the bridge cannot start its demo agent as itself (without
# binfmt_misc the kernel cannot run a foreign binary), so ZEROCLAW_BIN points
# at a wrapper that runs "RUNNER BINARY acp" (acp is the demo agent's other
# name): the same binary still serves both ends.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BINARY PLATFORM [RUNNER...]" >&2; exit 2; }
bin="$(realpath "$1")" platform="$2"
shift 2
runner=("$@")

fail() { echo "smoke: $platform: $*" >&2; [ -f "${log:-}" ] && tail -n 40 "$log" | cut -c1-300 | sed 's/^/  | /' >&2; exit 1; }

tmp="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# http METHOD PATH [JSON]: the status line and body of a request to the bridge.
http() {
  local req
  req="$1 $2 HTTP/1.0\r\nHost: 127.0.0.1\r\n"
  if [ $# -ge 3 ]; then req+="Content-Type: application/json\r\nContent-Length: ${#3}\r\n\r\n$3"; else req+="\r\n"; fi
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout 20 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf "$1" >&3 && cat <&3' "$port" "$req"
}

start=$SECONDS
out="$("${runner[@]}" "$bin" version)" || fail "version failed"
first="$(head -n 1 <<<"$out")"
case "$first" in "zeroclaw-bridge "*) ;; *) fail "version's first line is '$first'" ;; esac
grep -qx "platform: $platform" <<<"$out" || fail "version does not say platform: $platform:$(printf '\n%s' "$out")"
grep -Eq '^commit: +[0-9a-f]{40}' <<<"$out" || fail "version has no commit stamp:$(printf '\n%s' "$out")"
echo "smoke: $platform: $first"

env_args=(
  HOME="$tmp/home" PATH=/usr/bin:/bin BRIDGE_HOST=127.0.0.1 LOG_LEVEL=info LOG_FORMAT=text
  WEATHER_LOCATION=- CONVO_LOG_DIR="$tmp/logs" VOICE_MEMORY_DB="$tmp/zeroclaw/brain.db"
  DOTTY_KID_MODE_STATE="$tmp/state/kid-mode" DOTTY_SMART_MODE_STATE="$tmp/state/smart-mode"
  DOTTY_TOOL_ALLOWLIST="$tmp/state/tool-allowlist" GREETER_STATE_PATH="$tmp/state/greeter.json"
  HOUSEHOLD_YAML_PATH="$tmp/household.yaml" ZEROCLAW_WORKSPACE="$tmp/zeroclaw/workspace"
  ZEROCLAW_VOICE_CFG="$tmp/zeroclaw/config.toml" SIDECAR_PERSONAS_DIR="$tmp/personas"
)
if [ ${#runner[@]} -gt 0 ]; then
  printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${runner[*]}" "$bin" >"$tmp/agent"
  chmod +x "$tmp/agent"
  env_args+=(ZEROCLAW_BIN="$tmp/agent")
fi
mkdir -p "$tmp/home"

log="$tmp/bridge.log"
for attempt in 1 2 3; do
  port=$((20000 + RANDOM % 40000))
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi # taken
  env -i "${env_args[@]}" PORT="$port" "${runner[@]}" "$bin" >"$log" 2>&1 &
  pid=$!
  up=false
  for _ in $(seq 1 300); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if health="$(http GET /health 2>/dev/null)" && [[ "$health" == *'"state":"ready"'* ]]; then
      up=true
      break
    fi
    sleep 0.2
  done
  $up && break
  if kill -0 "$pid" 2>/dev/null; then fail "no ready /health within 60 s"; fi
  grep -q 'address already in use' "$log" || fail "the bridge exited at start"
  echo "smoke: $platform: port $port was taken; attempt $attempt failed"
done
$up || fail "could not start on a free port"
[[ "$(head -n 1 <<<"$health")" == *' 200 '* ]] || fail "/health: $(head -n 1 <<<"$health")"
[[ "$health" == *'"status":"ok"'* && "$health" == *'"acp_running":true'* ]] || fail "/health: $health"
echo "smoke: $platform: /health ok on 127.0.0.1:$port after $((SECONDS - start)) s"

reply="$(http POST /api/message '{"content":"hello from the smoke test","channel":"ci","session_id":"smoke"}')"
[[ "$(head -n 1 <<<"$reply")" == *' 200 '* ]] || fail "/api/message: $reply"
[[ "$reply" == *'You said: \"hello from the smoke test\"'* ]] || fail "/api/message did not quote the prompt: $reply"
echo "smoke: $platform: /api/message answered: $(tail -n 1 <<<"$reply" | cut -c1-120)"

kill -TERM "$pid"
status=0
for _ in $(seq 1 150); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
kill -0 "$pid" 2>/dev/null && fail "still running 30 s after SIGTERM"
wait "$pid" || status=$?
pid=""
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM"
grep -q 'stopped' "$log" || fail "no 'stopped' line after SIGTERM"
if pgrep -f -- "$bin (demo-agent|acp)" >/dev/null 2>&1; then fail "the demo agent outlived the bridge"; fi
echo "smoke: $platform: SIGTERM: exit 0 ($((SECONDS - start)) s in all)"
