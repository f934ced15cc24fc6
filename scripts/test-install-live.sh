#!/usr/bin/env bash
# Tests install.sh on the live root (no --root): the systemctl calls, the
# wait for /health and the rollback's stop, enable and start, with the host
# left untouched. In a private mount namespace (unshare -m), /etc,
# /usr/local and /var/lib get a throwaway overlay, and a stand-in
# `systemctl` (this container has no systemd running) keeps the unit's
# state in a directory and starts the unit's ExecStart with its env file.
#
#   scripts/test-install-live.sh TARBALL      (as root)
#
# Checked: an install over a running bridge.py unit stops it, starts the Go
# bridge and waits for its /health; the bridge answers on the carried-over
# PORT; --rollback stops it, restores bridge.py's unit and starts that
# again (it was enabled and active); after `systemctl edit --full` of the
# Go unit, --rollback still brings bridge.py's unit back and starts it (the
# edited unit saved as .after-install); a start that fails after a rollback
# keeps the snapshot (exit 1), and --rollback again finishes; a bridge that
# never becomes healthy makes install.sh exit 6.
set -euo pipefail
if [ "${1:-}" != --inside ]; then
  [ $# -eq 1 ] || { echo "usage: $0 TARBALL" >&2; exit 2; }
  [ "$(id -u)" -eq 0 ] || { echo "test-install-live: SKIP: needs root (a mount namespace)"; exit 0; }
  command -v unshare >/dev/null || { echo "test-install-live: SKIP: no unshare"; exit 0; }
  exec unshare -m --propagation private "$0" --inside "$(realpath "$1")"
fi
tarball="$2"
here="$(cd "$(dirname "$0")" && pwd)"

tmp="$(mktemp -d)"
state="$tmp/systemd"
mkdir -p "$state"
for d in /etc /usr/local /var/lib; do
  o="$tmp/overlay$d"
  mkdir -p "$o/upper" "$o/work"
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$o/upper,workdir=$o/work" "$d"
done
cleanup() {
  if [ -f "$state/pid" ]; then kill -KILL "$(cat "$state/pid")" 2>/dev/null || true; fi
  umount /etc /usr/local /var/lib 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "test-install-live: FAIL: $*" >&2; [ -f "$tmp/out" ] && sed 's/^/  | /' "$tmp/out" >&2; exit 1; }
pass() { echo "test-install-live: ok: $*"; }

# The stand-in systemctl: enabled/active state in $state, the unit's
# process started from its ExecStart with its first env file; while
# $state/fail-start exists, start fails as a unit that cannot start does.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/systemctl" <<EOF
#!/usr/bin/env bash
state="$state" scratch="$tmp/scratch"
EOF
cat >>"$tmp/bin/systemctl" <<'EOF'
unit=/etc/systemd/system/zeroclaw-bridge.service
echo "systemctl $*" >>"$state/calls"
running() { [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; }
stop() {
  if running; then
    kill -TERM "$(cat "$state/pid")"
    for _ in $(seq 1 100); do running || break; sleep 0.1; done
  fi
  rm -f "$state/pid"
}
start() {
  running && return 0
  if [ -f "$state/fail-start" ]; then
    echo "Job for zeroclaw-bridge.service failed because the control process exited with error code." >&2
    exit 1
  fi
  exec_start="$(sed -n 's/^ExecStart=\(.\+\)$/\1/p' "$unit" | tail -n 1)"
  case "$exec_start" in
    */zeroclaw-bridge)
      mkdir -p "$scratch"
      (
        set -a
        # What a Go bridge may write goes to the scratch directory; the env file wins.
        HOME="$scratch" WEATHER_LOCATION=- CONVO_LOG_DIR="$scratch/logs" VOICE_MEMORY_DB="$scratch/brain.db"
        DOTTY_KID_MODE_STATE="$scratch/kid" DOTTY_SMART_MODE_STATE="$scratch/smart" DOTTY_TOOL_ALLOWLIST="$scratch/allow"
        GREETER_STATE_PATH="$scratch/greeter.json" ZEROCLAW_BIN=
        [ ! -f /etc/zeroclaw-bridge/env ] || . /etc/zeroclaw-bridge/env
        exec "$exec_start" >>"$state/bridge.log" 2>&1
      ) &
      ;;
    *) sleep 1000 & ;; # bridge.py stand-in
  esac
  echo $! >"$state/pid"
}
quiet=false
args=()
for a in "$@"; do
  case "$a" in --quiet | -q) quiet=true ;; --now) now=true ;; *) args+=("$a") ;; esac
done
case "${args[0]}" in
  daemon-reload) ;;
  enable) touch "$state/enabled" ;;
  disable) rm -f "$state/enabled"; [ -z "${now:-}" ] || stop ;;
  is-enabled) if [ -f "$state/enabled" ]; then echo enabled; else echo disabled; exit 1; fi ;;
  is-active) if running; then $quiet || echo active; else $quiet || echo inactive; exit 3; fi ;;
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  *) echo "stand-in systemctl: ${args[0]} not supported" >&2; exit 1 ;;
esac
EOF
chmod +x "$tmp/bin/systemctl"
export PATH="$tmp/bin:$PATH"

port=$((20000 + RANDOM % 40000))
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((20000 + RANDOM % 40000)); done

# bridge.py, enabled and running.
mkdir -p /etc/systemd/system
cat >/etc/systemd/system/zeroclaw-bridge.service <<EOF
[Unit]
Description=ZeroClaw HTTP Bridge for StackChan

[Service]
Type=simple
Environment=PORT=$port BRIDGE_HOST=127.0.0.1
Environment=ZEROCLAW_BIN=
ExecStart=/root/zeroclaw-bridge/.venv/bin/python /root/zeroclaw-bridge/bridge.py
Restart=on-failure

[Install]
WantedBy=multi-user.target
EOF
systemctl enable zeroclaw-bridge.service
systemctl start zeroclaw-bridge.service
py_pid="$(cat "$state/pid")"
cp /etc/systemd/system/zeroclaw-bridge.service "$tmp/bridgepy.service"

"$here/install.sh" "$tarball" >"$tmp/out" 2>&1 || fail "install.sh exited $?"
grep -q 'zeroclaw-bridge is up' "$tmp/out" || fail "no health wait in the output"
kill -0 "$py_pid" 2>/dev/null && fail "bridge.py's process still runs"
# shellcheck disable=SC2016 # expanded by the inner bash
health="$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf "GET /health HTTP/1.0\r\n\r\n" >&3 && cat <&3' "$port")" || fail "nothing on port $port"
[[ "$health" == *'"acp_running":true'* ]] || fail "/health: $health"
grep -qx "systemctl restart zeroclaw-bridge.service" "$state/calls" || fail "no restart: $(cat "$state/calls")"
[ -f "$state/enabled" ] || fail "not enabled"
pass "install over a running bridge.py: restarted as the Go bridge, healthy on the carried-over PORT=$port"

go_pid="$(cat "$state/pid")"
"$here/install.sh" --rollback >"$tmp/out" 2>&1 || fail "--rollback exited $?"
kill -0 "$go_pid" 2>/dev/null && fail "the Go bridge still runs after --rollback"
cmp -s "$tmp/bridgepy.service" /etc/systemd/system/zeroclaw-bridge.service || fail "bridge.py's unit is not back"
[ -f "$state/enabled" ] || fail "not enabled after --rollback"
systemctl is-active --quiet zeroclaw-bridge.service || fail "bridge.py not started again"
[ ! -e /usr/local/bin/zeroclaw-bridge ] || fail "the binary is still there"
pass "--rollback: Go bridge stopped, bridge.py's unit back, enabled and started"

# The Go unit edited (systemctl edit --full) after the install: --rollback
# puts bridge.py's unit back all the same (the Go unit without its binary
# could not start), saves the edited one beside it, and starts bridge.py.
unit=/etc/systemd/system/zeroclaw-bridge.service
"$here/install.sh" "$tarball" >"$tmp/out" 2>&1 || fail "install.sh exited $?"
sed -i 's/^Restart=.*/Restart=always/' "$unit"
cp "$unit" "$tmp/edited.service"
"$here/install.sh" --rollback >"$tmp/out" 2>&1 || fail "--rollback after an edit of the unit exited $?"
cmp -s "$tmp/bridgepy.service" "$unit" || fail "bridge.py's unit is not back after an edit of the Go unit"
cmp -s "$tmp/edited.service" "$unit.after-install" || fail "the edited unit is not at $unit.after-install"
systemctl is-active --quiet zeroclaw-bridge.service || fail "bridge.py not started again"
[ -z "$(ls -A /var/lib/zeroclaw-bridge/backup 2>/dev/null)" ] || fail "the snapshot is left: $(ls /var/lib/zeroclaw-bridge/backup)"
rm "$unit.after-install"
pass "--rollback after systemctl edit --full: bridge.py's unit back and started, the edited unit saved as .after-install"

# A start that fails after the files are rolled back: exit 1, the snapshot
# kept with how to finish; once the cause is gone, --rollback again starts
# bridge.py and lets the snapshot go.
"$here/install.sh" "$tarball" >"$tmp/out" 2>&1 || fail "install.sh exited $?"
touch "$state/fail-start"
rc=0
"$here/install.sh" --rollback >"$tmp/out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "--rollback with a failing start exited $rc, want 1"
grep -q 'did not start' "$tmp/out" || fail "no word of the failed start"
grep -q 'the snapshot /var/lib/zeroclaw-bridge/backup/[0-9]* is kept' "$tmp/out" || fail "no word of the kept snapshot"
grep -q -- '--rollback again to finish it' "$tmp/out" || fail "no word of how to finish"
snaps="$(ls /var/lib/zeroclaw-bridge/backup)"
[ -n "$snaps" ] || fail "the snapshot was deleted although the start failed"
cmp -s "$tmp/bridgepy.service" "$unit" || fail "bridge.py's unit is not back"
rm "$state/fail-start"
"$here/install.sh" --rollback >"$tmp/out" 2>&1 || fail "--rollback again exited $?"
systemctl is-active --quiet zeroclaw-bridge.service || fail "bridge.py not started by --rollback again"
[ -z "$(ls -A /var/lib/zeroclaw-bridge/backup 2>/dev/null)" ] || fail "the snapshot is left after --rollback again"
[ -z "$(find /etc/systemd/system -name 'zeroclaw-bridge.service.*-install*')" ] || fail "copies beside the unit: $(find /etc/systemd/system -name 'zeroclaw-bridge.service.*')"
pass "--rollback whose start fails: exit 1, the snapshot ($snaps) kept; --rollback again starts bridge.py and deletes it"

# A bridge that cannot become healthy: an env file with a bad PORT (it
# exits with a configuration error), kept by the install.
mkdir -p /etc/zeroclaw-bridge
printf 'PORT=not-a-port\n' >/etc/zeroclaw-bridge/env
rc=0
"$here/install.sh" --wait 5 "$tarball" >"$tmp/out" 2>&1 || rc=$?
[ "$rc" -eq 6 ] || fail "an unhealthy install exited $rc, want 6"
grep -q -- '--rollback' "$tmp/out" || fail "no rollback hint"
pass "a bridge that never answers /health: exit 6 with the rollback hint"
