#!/usr/bin/env bash
# Tests scripts/install.sh against throwaway roots (install.sh --root), with
# the release tarballs of a `scripts/release.sh` run:
#
#   scripts/test-install.sh DIST [UPGRADE_TARBALL]
#
# DIST holds the tarballs and SHA256SUMS; UPGRADE_TARBALL is a second
# release for this host's architecture with another version (CI builds one
# with --version), used for the upgrade and two-step rollback; without it
# that part is skipped. Checked:
#   - a fresh install (files, modes, the unit, the env file = the example),
#     idempotent (a second run changes nothing), rollback to the empty root
#     exactly, and a second rollback refused (exit 5);
#   - over bridge.py's unit: every Environment= setting lands in the env file
#     with its value (quotes, several per line, continuation lines, %%, the
#     last one winning), EnvironmentFile=, User= and WorkingDirectory= stay
#     in the unit, the docs' 10-go-bridge.conf drop-in goes; then an upgrade
#     keeps the previous binary; rollback twice restores the upgrade's start
#     and then bridge.py's files exactly (names, modes, owners, sizes, times,
#     checksums);
#   - the unit runs as User=root (systemd then sets HOME=/root), an existing
#     unit's other User= and Group= replace it, and its Documentation= names
#     an installed file;
#   - rollback undoes only what the install changed: an env file edited
#     since is kept, and the version from before the install is written
#     beside it (env.before-install, .before-install.2, ..., 0600), each
#     action printed (--dry-run too); an env file the install did not change
#     is not touched; a snapshot of an older install.sh (no checksums) keeps
#     an edited env file too;
#   - the unit belongs to the install: edited since (systemctl edit --full),
#     rollback puts bridge.py's back all the same and saves the edited one
#     as zeroclaw-bridge.service.after-install (0600);
#   - a restore that fails (a cp that fails writing, as on a full disk)
#     leaves the file in place, no half-written copy, and the snapshot; the
#     rollback exits 1 saying how to finish, and --rollback again does;
#   - --dry-run changes nothing (install and rollback);
#   - exit codes: 2 usage, 3 another architecture, 4 checksum mismatch,
#     5 nothing to roll back;
#   - systemd-analyze verify on the installed unit (see verify_unit).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DIST [UPGRADE_TARBALL]" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
installer="$here/install.sh"
dist="$(cd "$1" && pwd)"
upgrade="${2:-}"
[ -z "$upgrade" ] || upgrade="$(realpath "$upgrade")"

case "$(uname -m)" in
  x86_64) arch=amd64 other=arm64 ;;
  aarch64) arch=arm64 other=amd64 ;;
  armv7l | armv8l) arch=armv7 other=amd64 ;;
  *) echo "test-install: no release for $(uname -m)" >&2; exit 1 ;;
esac
tarball="$(ls "$dist"/zeroclaw-bridge_*_linux_"$arch".tar.gz)"
other_tarball="$(ls "$dist"/zeroclaw-bridge_*_linux_"$other".tar.gz 2>/dev/null || true)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n=0
pass() { n=$((n + 1)); echo "test-install: ok: $*"; }
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }

# newroot NAME: an empty host: the directories a Debian system has.
newroot() {
  local r="$tmp/$1"
  mkdir -p "$r"/usr/local/bin "$r"/usr/local/share/doc "$r"/etc/systemd/system "$r"/var/lib "$r"/root
  echo "$r"
}

# tree DIR: names, types, modes, owners, sizes, link targets, file mtimes and
# checksums of everything under DIR (directory mtimes left out: a directory's
# changes whenever a file in it comes and goes).
tree() {
  (
    cd "$1"
    find . -type d -printf 'd %p %m %U:%G\n' -o ! -type d -printf '%y %p %m %U:%G %s %T@ %l\n' | LC_ALL=C sort
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
  )
}

# same_tree BEFORE NAME WHAT: $r's tree, written to $tmp/NAME, is the one
# in $tmp/BEFORE; else fails with WHAT and the difference.
same_tree() {
  tree "$r" >"$tmp/$2"
  cmp -s "$tmp/$1" "$tmp/$2" || fail "$3: $(diff "$tmp/$1" "$tmp/$2")"
}

# install_again NAME WHAT: a second install over $r does nothing and
# changes nothing ($tmp/NAME.1: the tree before it); passes WHAT's line.
install_again() {
  tree "$r" >"$tmp/$1.1"
  run 0 --root "$r" "$tarball"
  grep -q 'nothing to do' "$tmp/out" || fail "second install did something: $(cat "$tmp/out")"
  same_tree "$1.1" "$1.2" "second install changed the root"
  pass "$2: a second install changes nothing"
}

# over_bridgepy NAME: r, a copy of the bridge.py root (bridgepy.orig) at
# $tmp/NAME with the release installed over it, and unit, its unit file.
over_bridgepy() {
  r="$tmp/$1"
  cp -a "$tmp/bridgepy.orig" "$r"
  unit="$r/etc/systemd/system/zeroclaw-bridge.service"
  run 0 --root "$r" "$tarball"
}

# run CODE ARGS...: install.sh exits with CODE; its output goes to $tmp/out.
run() {
  local want="$1" got=0
  shift
  "$installer" "$@" >"$tmp/out" 2>&1 || got=$?
  if [ "$got" -ne "$want" ]; then
    sed 's/^/  | /' "$tmp/out" >&2
    fail "install.sh $* exited $got, want $want"
  fi
}

# verify_unit ROOT: systemd-analyze verify of the installed unit with ROOT's
# files and this host's system units (a copy, so ROOT stays as it is); a
# warning counts as a failure, as does a unit it cannot load.
verify_unit() {
  local v="$tmp/verify"
  rm -rf "$v"
  cp -a "$1" "$v"
  mkdir -p "$v/usr/lib/systemd" "$v/tmp"
  cp -a /usr/lib/systemd/system "$v/usr/lib/systemd/"
  local out rc=0
  out="$(systemd-analyze verify --root="$v" /etc/systemd/system/zeroclaw-bridge.service 2>&1)" || rc=$?
  if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    fail "systemd-analyze verify (exit $rc): $out"
  fi
}

bin_version() { local v; v="$("$1/usr/local/bin/zeroclaw-bridge" version)" && head -n 1 <<<"$v"; }

# ── exit codes ──────────────────────────────────────────────────────────────
r="$(newroot codes)"
run 2 --root "$r" --no-such-option
run 2 --root "$r/missing" "$tarball"
run 5 --root "$r" --rollback
if [ -n "$other_tarball" ]; then
  run 3 --root "$r" "$other_tarball"
  grep -q "is for linux/$other" "$tmp/out" || fail "no architecture message: $(cat "$tmp/out")"
fi
mkdir "$tmp/bad"
cp "$tarball" "$tmp/bad/"
sed "s/^[0-9a-f]\{8\}/00000000/" "$dist/SHA256SUMS" >"$tmp/bad/SHA256SUMS"
run 4 --root "$r" "$tmp/bad/$(basename "$tarball")"
: >"$tmp/bad/SHA256SUMS"
run 4 --root "$r" "$tmp/bad/$(basename "$tarball")"
[ -z "$(find "$r" -mindepth 1 -not -type d)" ] || fail "a refused install left files behind"
pass "exit codes 2, 3, 4, 5 and nothing written by a refused install"

# ── fresh install ───────────────────────────────────────────────────────────
r="$(newroot fresh)"
tree "$r" >"$tmp/fresh.0"
run 0 --root "$r" --dry-run "$tarball"
grep -q '^would run: install ' "$tmp/out" || fail "--dry-run printed no actions"
same_tree fresh.0 fresh.dry "--dry-run changed the root"
pass "fresh: --dry-run prints its actions and changes nothing"

run 0 --root "$r" "$tarball"
[ "$(stat -c %a "$r/usr/local/bin/zeroclaw-bridge")" = 755 ] || fail "binary mode"
[ "$(stat -c %a "$r/etc/zeroclaw-bridge/env")" = 600 ] || fail "env file mode"
[ "$(stat -c %a "$r/var/lib/zeroclaw-bridge/backup")" = 700 ] || fail "backup dir mode"
grep -qx 'Type=notify' "$r/etc/systemd/system/zeroclaw-bridge.service" || fail "unit is not Type=notify"
grep -qx 'EnvironmentFile=-/etc/zeroclaw-bridge/env' "$r/etc/systemd/system/zeroclaw-bridge.service" || fail "unit does not read the env file"
[ "$(grep '^User=' "$r/etc/systemd/system/zeroclaw-bridge.service")" = User=root ] || fail "unit does not run as User=root (HOME)"
doc="$(sed -n 's/^Documentation=file://p' "$r/etc/systemd/system/zeroclaw-bridge.service")"
{ [ -n "$doc" ] && [ -f "$r$doc" ]; } || fail "the unit's Documentation= ($doc) is not an installed file"
tar -xzf "$tarball" -O --wildcards '*/env.example' | cmp -s - "$r/etc/zeroclaw-bridge/env" || fail "fresh env file is not the example"
[ ! -e "$r/etc/systemd/system/zeroclaw-bridge.service.d" ] || fail "a drop-in directory appeared"
grep -q 'skipped (root is ' "$tmp/out" || fail "systemctl was not skipped for --root"
verify_unit "$r"
pass "fresh: installed ($(bin_version "$r")), unit verified"

install_again fresh fresh

run 0 --root "$r" --rollback --dry-run
same_tree fresh.1 fresh.3 "rollback --dry-run changed the root"
run 0 --root "$r" --rollback
same_tree fresh.0 fresh.4 "rollback did not restore the empty root"
run 5 --root "$r" --rollback
pass "fresh: rollback restores the root exactly; a second rollback is refused"

# From an extracted release, without an argument.
r="$(newroot extracted)"
mkdir "$tmp/x"
tar -xzf "$tarball" -C "$tmp/x"
inner=("$tmp"/x/*/install.sh)
"${inner[0]}" --root "$r" >"$tmp/out" 2>&1 || fail "install.sh inside the release: $(cat "$tmp/out")"
[ -x "$r/usr/local/bin/zeroclaw-bridge" ] || fail "install from the extracted release installed no binary"
pass "install.sh inside an extracted release installs it"

# ── over bridge.py ──────────────────────────────────────────────────────────
r="$(newroot bridgepy)"
mkdir -p "$r/root/zeroclaw-bridge" "$r/etc/systemd/system/zeroclaw-bridge.service.d"
printf 'OPENROUTER_API_KEY=sk-test\n' >"$r/root/zeroclaw-bridge/.env"
chmod 600 "$r/root/zeroclaw-bridge/.env"
cat >"$r/etc/systemd/system/zeroclaw-bridge.service" <<'EOF'
[Unit]
Description=ZeroClaw HTTP Bridge for StackChan
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=root
WorkingDirectory=/root/zeroclaw-bridge
EnvironmentFile=-/root/zeroclaw-bridge/.env
Environment=ZEROCLAW_BIN=/root/.cargo/bin/zeroclaw
Environment=DOTTY_DEFAULT_MODEL=qwen3.5:4b
Environment=VOICE_THINKER_TIMEOUT=90
Environment=VOICE_LOCAL_PROFILE_KEY=custom:http://192.168.1.20:8080/v1
Environment="FACE_GREET_TEXT=Hello there, friend" PORT=8080 \
  TZ=Europe/London
Environment='SECURITY_VLM_PROMPT=Say "what" you $see, 100%% sure'
Environment="FACE_NAME_GREET_TEMPLATE=It's {name}!"
Environment=CALENDAR_ID=a@group.calendar.google.com,b@group.calendar.google.com
# Environment=WEATHER_LOCATION=Brisbane
Environment=PORT=8081
ExecStart=/root/zeroclaw-bridge/.venv/bin/python /root/zeroclaw-bridge/bridge.py
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
EOF
cp "$here/../docs/systemd/zeroclaw-bridge.service.d/10-go-bridge.conf" "$r/etc/systemd/system/zeroclaw-bridge.service.d/"
printf '[Service]\nLimitNOFILE=4096\n' >"$r/etc/systemd/system/zeroclaw-bridge.service.d/50-local.conf"
tree "$r" >"$tmp/py.0"
cp -a "$r" "$tmp/bridgepy.orig" # for the cases below that start from bridge.py

run 0 --root "$r" --dry-run "$tarball"
grep -q 'found bridge.py' "$tmp/out" || fail "bridge.py's unit not recognised: $(cat "$tmp/out")"
grep -q '^+PORT=8081$' "$tmp/out" || fail "--dry-run does not show the carried settings"
same_tree py.0 py.dry "--dry-run changed the root"
pass "bridge.py: --dry-run shows the env changes and changes nothing"

run 0 --root "$r" "$tarball"
env_file="$r/etc/zeroclaw-bridge/env"
unit="$r/etc/systemd/system/zeroclaw-bridge.service"
# The values as the bridge will see them (systemd and bash read this subset
# of quoting alike).
# shellcheck disable=SC2016 # expanded by the inner bash
got="$(env -i bash -c 'set -a; . "$1"; for v in ZEROCLAW_BIN DOTTY_DEFAULT_MODEL VOICE_THINKER_TIMEOUT VOICE_LOCAL_PROFILE_KEY FACE_GREET_TEXT PORT TZ SECURITY_VLM_PROMPT FACE_NAME_GREET_TEMPLATE CALENDAR_ID WEATHER_LOCATION; do printf "%s=[%s]\n" "$v" "${!v-unset}"; done' _ "$env_file")"
# shellcheck disable=SC2016 # a literal $see
want='ZEROCLAW_BIN=[/root/.cargo/bin/zeroclaw]
DOTTY_DEFAULT_MODEL=[qwen3.5:4b]
VOICE_THINKER_TIMEOUT=[90]
VOICE_LOCAL_PROFILE_KEY=[custom:http://192.168.1.20:8080/v1]
FACE_GREET_TEXT=[Hello there, friend]
PORT=[8081]
TZ=[Europe/London]
SECURITY_VLM_PROMPT=[Say "what" you $see, 100% sure]
FACE_NAME_GREET_TEMPLATE=[It'"'"'s {name}!]
CALENDAR_ID=[a@group.calendar.google.com,b@group.calendar.google.com]
WEATHER_LOCATION=[unset]'
[ "$got" = "$want" ] || fail "carried settings:$(printf '\n%s' "$got")$(printf '\nwant:\n%s' "$want")"
[ "$(grep -c '^PORT=' "$env_file")" = 1 ] || fail "PORT carried more than once"
for line in 'EnvironmentFile=-/root/zeroclaw-bridge/.env' 'User=root' 'WorkingDirectory=/root/zeroclaw-bridge' 'Type=notify' 'ExecStart=/usr/local/bin/zeroclaw-bridge'; do
  grep -qxF "$line" "$unit" || fail "unit lacks $line"
done
grep -q 'python' "$unit" && fail "unit still runs python"
[ "$(grep -c '^User=' "$unit")" = 1 ] || fail "unit has $(grep -c '^User=' "$unit") User= lines, want 1"
[ ! -e "$r/etc/systemd/system/zeroclaw-bridge.service.d/10-go-bridge.conf" ] || fail "10-go-bridge.conf is still there"
[ -f "$r/etc/systemd/system/zeroclaw-bridge.service.d/50-local.conf" ] || fail "the operator's drop-in was removed"
cmp -s "$r/root/zeroclaw-bridge/.env" <(printf 'OPENROUTER_API_KEY=sk-test\n') || fail ".env was touched"
verify_unit "$r"
pass "bridge.py: settings carried over, unit verified ($(bin_version "$r"))"

install_again py bridge.py

if [ -n "$upgrade" ]; then
  old="$(bin_version "$r")"
  # An operator's edit of the env file survives the upgrade.
  printf '\nLOG_LEVEL=debug\n' >>"$env_file"
  tree "$r" >"$tmp/py.3"
  run 0 --root "$r" "$upgrade"
  new="$(bin_version "$r")"
  [ "$new" != "$old" ] || fail "the upgrade did not replace the binary ($new)"
  grep -qx 'LOG_LEVEL=debug' "$env_file" || fail "the upgrade lost an env edit"
  grep -qxF 'EnvironmentFile=-/root/zeroclaw-bridge/.env' "$unit" || fail "the upgrade lost the kept EnvironmentFile="
  verify_unit "$r"
  pass "upgrade: $old -> $new, env file and kept unit lines intact"

  run 0 --root "$r" --rollback
  tree "$r" >"$tmp/py.4"
  cmp -s "$tmp/py.3" "$tmp/py.4" || fail "rollback did not restore the previous release: $(diff "$tmp/py.3" "$tmp/py.4")"
  [ "$(bin_version "$r")" = "$old" ] || fail "rollback: binary is $(bin_version "$r")"
  pass "upgrade: rollback restores the previous release exactly ($old)"
fi

tree "$r" >"$tmp/py.5"
run 0 --root "$r" --rollback --dry-run
same_tree py.5 py.6 "rollback --dry-run changed the root"
run 0 --root "$r" --rollback
if [ -n "$upgrade" ]; then
  # The env file was edited after the first install (LOG_LEVEL, above): it
  # is kept; bridge.py had none, so nothing is written beside it.
  grep -qxF 'install.sh: keeping /etc/zeroclaw-bridge/env: it has changed since the install (it did not exist before it)' "$tmp/out" ||
    fail "rollback did not say it keeps the edited env file: $(cat "$tmp/out")"
  grep -qx 'LOG_LEVEL=debug' "$env_file" || fail "rollback lost the env edit"
  [ -z "$(find "$r/etc/zeroclaw-bridge" -name '*.before-install*')" ] || fail "a pre-install copy of an env file that did not exist"
  rm -rf "$r/etc/zeroclaw-bridge"
fi
same_tree py.0 py.7 "rollback did not restore bridge.py's state exactly"
grep -q python "$unit" || fail "bridge.py's unit is not back"
[ -f "$r/etc/systemd/system/zeroclaw-bridge.service.d/10-go-bridge.conf" ] || fail "10-go-bridge.conf is not back"
run 5 --root "$r" --rollback
pass "bridge.py: rollback restores bridge.py's unit, drop-ins and no env file, exactly"

# ── the operator's edits ────────────────────────────────────────────────────
# A fresh install, then an edit of the env file it created: rollback keeps
# the file (there was none before, so nothing goes beside it) and removes
# the rest.
r="$(newroot edited)"
run 0 --root "$r" "$tarball"
env_file="$r/etc/zeroclaw-bridge/env"
printf '\nDOTTY_DASHBOARD_PASS=s3cret\n' >>"$env_file"
tree "$r" >"$tmp/ed.1"
run 0 --root "$r" --rollback --dry-run
grep -q '^install.sh: keeping /etc/zeroclaw-bridge/env: it has changed since the install' "$tmp/out" ||
  fail "rollback --dry-run does not say it keeps the edited env file: $(cat "$tmp/out")"
grep -q '^install.sh: removing /usr/local/bin/zeroclaw-bridge (the install created it)$' "$tmp/out" ||
  fail "rollback --dry-run does not say it removes the binary: $(cat "$tmp/out")"
same_tree ed.1 ed.2 "rollback --dry-run changed the root"
run 0 --root "$r" --rollback
grep -qx 'DOTTY_DASHBOARD_PASS=s3cret' "$env_file" || fail "rollback discarded the env edit"
[ "$(stat -c %a "$env_file")" = 600 ] || fail "kept env file mode"
grep -q ' 1 kept because they changed since the install' "$tmp/out" || fail "no summary: $(cat "$tmp/out")"
[ "$(find "$r" -mindepth 1 -not -type d | sed "s#^$r##")" = /etc/zeroclaw-bridge/env ] ||
  fail "rollback left more than the env file: $(find "$r" -mindepth 1 -not -type d)"
pass "edited: rollback of a fresh install keeps the edited env file and removes the rest"

# An existing env file and unit (User=dotty, an Environment= line the
# install carries into the env file): the unit keeps User= and Group=; after
# an edit, rollback keeps the env file and writes the one from before the
# install beside it; a second round writes env.before-install.2.
r="$(newroot operator)"
env_file="$r/etc/zeroclaw-bridge/env"
unit="$r/etc/systemd/system/zeroclaw-bridge.service"
mkdir -p "$r/etc/zeroclaw-bridge"
printf 'PORT=8090\nDOTTY_ADMIN_TOKEN=old-token\n' >"$env_file"
chmod 600 "$env_file"
printf '%s\n' '[Unit]' 'Description=zeroclaw-bridge, by hand' '' '[Service]' 'User=dotty' 'Group=dotty' \
  'EnvironmentFile=-/etc/zeroclaw-bridge/env' 'Environment=LOG_LEVEL=info' 'ExecStart=/usr/local/bin/zeroclaw-bridge' \
  '' '[Install]' 'WantedBy=multi-user.target' >"$unit"
cp -a "$env_file" "$tmp/env.orig"
tree "$r" >"$tmp/op.0"
run 0 --root "$r" "$tarball"
grep -qx 'LOG_LEVEL=info' "$env_file" || fail "LOG_LEVEL was not carried over"
{ grep -qx 'User=dotty' "$unit" && grep -qx 'Group=dotty' "$unit"; } || fail "User=/Group= not kept: $(cat "$unit")"
[ "$(grep -c '^User=' "$unit")" = 1 ] || fail "the unit has $(grep -c '^User=' "$unit") User= lines, want 1 (User=dotty)"
run 0 --root "$r" "$tarball"
grep -q 'nothing to do' "$tmp/out" || fail "second install did something: $(cat "$tmp/out")"
pass "operator: the unit keeps User=dotty and Group=dotty (no User=root), a second install changes nothing"

for round in 1 2; do
  printf '\nDOTTY_DASHBOARD_PASS=round%s\n' "$round" >>"$env_file"
  cp -a "$env_file" "$tmp/env.edited"
  run 0 --root "$r" --rollback
  saved=/etc/zeroclaw-bridge/env.before-install
  [ "$round" = 1 ] || saved="$saved.$round"
  grep -qxF "install.sh: keeping /etc/zeroclaw-bridge/env: it has changed since the install; the version from before the install goes to $saved" "$tmp/out" ||
    fail "round $round: rollback does not say where the old env file goes: $(cat "$tmp/out")"
  grep -q '^install.sh: restoring /etc/systemd/system/zeroclaw-bridge.service (as it was before the install)$' "$tmp/out" ||
    fail "round $round: rollback does not say it restores the unit: $(cat "$tmp/out")"
  cmp -s "$tmp/env.edited" "$env_file" || fail "round $round: the edited env file changed"
  cmp -s "$tmp/env.orig" "$r$saved" || fail "round $round: $saved is not the env file from before the install"
  [ "$(stat -c %a "$r$saved")" = 600 ] || fail "round $round: $saved mode $(stat -c %a "$r$saved"), want 600"
  # Everything else is as before the install.
  tree "$r" | grep -v ' \./etc/zeroclaw-bridge/env' >"$tmp/op.r"
  grep -v ' \./etc/zeroclaw-bridge/env' "$tmp/op.0" | cmp -s - "$tmp/op.r" ||
    fail "round $round: rollback did not restore the rest: $(grep -v ' \./etc/zeroclaw-bridge/env' "$tmp/op.0" | diff - "$tmp/op.r")"
  if [ "$round" = 1 ]; then
    # Another env file before the second install: a copy the same as one
    # beside it already is not written twice.
    printf 'PORT=8090\nDOTTY_ADMIN_TOKEN=round-2-token\n' >"$tmp/env.orig"
    cp "$tmp/env.orig" "$env_file"
    run 0 --root "$r" "$tarball"
  fi
done
pass "operator: rollback keeps the edited env file, writes the old one beside it (env.before-install, then .2; 0600) and restores the rest"

# The env file exists and the install leaves it as it is (nothing to carry
# over): rollback does not touch it, edited or not.
r="$(newroot untouched)"
env_file="$r/etc/zeroclaw-bridge/env"
mkdir -p "$r/etc/zeroclaw-bridge"
printf 'PORT=8090\n' >"$env_file"
chmod 600 "$env_file"
run 0 --root "$r" "$tarball"
if sed -n 's/^install.sh: changing: //p' "$tmp/out" | grep -q '/etc/zeroclaw-bridge/env '; then
  fail "the install changed an env file it had nothing to add to: $(cat "$tmp/out")"
fi
printf 'LOG_LEVEL=debug\n' >>"$env_file"
run 0 --root "$r" --rollback
if grep -qE '/etc/zeroclaw-bridge/env([ :]|$)' "$tmp/out"; then fail "rollback acted on an env file the install did not change: $(cat "$tmp/out")"; fi
[ "$(cat "$env_file")" = "$(printf 'PORT=8090\nLOG_LEVEL=debug')" ] || fail "the env file changed: $(cat "$env_file")"
[ "$(find "$r" -mindepth 1 -not -type d | sed "s#^$r##")" = /etc/zeroclaw-bridge/env ] ||
  fail "rollback left more than the env file: $(find "$r" -mindepth 1 -not -type d)"
pass "untouched: rollback leaves alone an env file the install did not change"

# A snapshot of an older install.sh has no checksums (and lists every
# managed path): an edited env file is kept all the same.
r="$(newroot oldformat)"
env_file="$r/etc/zeroclaw-bridge/env"
run 0 --root "$r" "$tarball"
manifest="$r/var/lib/zeroclaw-bridge/backup/0001/manifest"
[ -f "$manifest" ] || fail "no snapshot manifest at $manifest"
sed -i -e '/^format /d' -e '/^installed /d' "$manifest"
printf 'absent etc/systemd/system/zeroclaw-bridge.service.d/10-go-bridge.conf\n' >>"$manifest"
printf '\nDOTTY_DASHBOARD_PASS=old-format\n' >>"$env_file"
run 0 --root "$r" --rollback
grep -qx 'DOTTY_DASHBOARD_PASS=old-format' "$env_file" || fail "old-format rollback discarded the env edit"
[ ! -e "$r/usr/local/bin/zeroclaw-bridge" ] || fail "old-format rollback left the binary"
pass "old-format snapshot: rollback keeps the edited env file and removes the rest"

# ── install-owned files edited since the install ────────────────────────────
# bridge.py, the Go install, then `systemctl edit --full zeroclaw-bridge`:
# rollback must not leave the Go unit without its binary. bridge.py's unit
# comes back, the edited one is saved beside it.
over_bridgepy unitedit
sed -i 's/^RestartSec=.*/RestartSec=2/' "$unit"
printf '# edited with systemctl edit --full\n' >>"$unit"
cp -a "$unit" "$tmp/unit.edited"
run 0 --root "$r" --rollback --dry-run
grep -qxF 'install.sh: /etc/systemd/system/zeroclaw-bridge.service has changed since the install: the install owns it, so it is put back; the edited version goes to /etc/systemd/system/zeroclaw-bridge.service.after-install' "$tmp/out" ||
  fail "rollback --dry-run does not say it saves the edited unit: $(cat "$tmp/out")"
[ ! -e "$unit.after-install" ] || fail "rollback --dry-run wrote the .after-install copy"
run 0 --root "$r" --rollback
grep -q '^install.sh: restoring /etc/systemd/system/zeroclaw-bridge.service (as it was before the install)$' "$tmp/out" ||
  fail "rollback does not say it restores the unit: $(cat "$tmp/out")"
grep -q '^install.sh: keeping ' "$tmp/out" && fail "rollback kept something: $(cat "$tmp/out")"
cmp -s "$tmp/unit.edited" "$unit.after-install" || fail "the .after-install copy is not the edited unit"
[ "$(stat -c %a "$unit.after-install")" = 600 ] || fail ".after-install mode $(stat -c %a "$unit.after-install"), want 600"
grep -q python "$unit" || fail "bridge.py's unit is not back: $(cat "$unit")"
rm "$unit.after-install"
same_tree py.0 ue.1 "rollback did not restore bridge.py's state exactly"
pass "edited unit: rollback puts bridge.py's unit back (and removes the binary), the edited one saved as .after-install (0600), the snapshot gone"

# A copy that fails (the disk full) while putting the unit back: the unit
# stays as it is (no half-written .new), the snapshot is kept, the exit is
# 1 with how to finish; --rollback again finishes it.
over_bridgepy restorefail
cp -a "$unit" "$tmp/unit.go"
mkdir "$tmp/fullbin"
cat >"$tmp/fullbin/cp" <<'EOF'
#!/bin/sh
# cp that runs out of space writing a unit: a partial file, then an error.
for a; do
  case "$a" in
    *.service.new)
      printf '[Unit]\n' >"$a"
      echo "cp: error writing '$a': No space left on device" >&2
      exit 1
      ;;
  esac
done
exec /bin/cp "$@"
EOF
chmod +x "$tmp/fullbin/cp"
(PATH="$tmp/fullbin:$PATH" run 1 --root "$r" --rollback)
grep -qF "install.sh: error: the rollback did not finish; the snapshot /var/lib/zeroclaw-bridge/backup/0001 is kept." "$tmp/out" ||
  fail "a failed restore does not say the snapshot is kept: $(cat "$tmp/out")"
grep -qF -- "--rollback --root $r again to finish it" "$tmp/out" || fail "a failed restore does not say how to finish: $(cat "$tmp/out")"
cmp -s "$tmp/unit.go" "$unit" || fail "a failed restore changed the unit: $(cat "$unit" 2>&1)"
[ ! -e "$unit.new" ] || fail "a failed restore left $unit.new"
[ -f "$r/var/lib/zeroclaw-bridge/backup/0001/manifest" ] || fail "a failed restore deleted the snapshot"
run 0 --root "$r" --rollback
same_tree py.0 rf.1 "--rollback again did not restore bridge.py's state exactly"
run 5 --root "$r" --rollback
pass "failed restore: the unit left in place, the snapshot kept, exit 1; --rollback again finishes exactly"

echo "test-install: $n passed, 0 failed"
