#!/usr/bin/env bash
# install.sh: installs a zeroclaw-bridge release on a Debian or Raspberry Pi OS
# host with systemd, over nothing, over bridge.py, or over an older release.
# No network is needed.
#
# Usage:
#   sudo ./install.sh [options] [RELEASE]
#   sudo ./install.sh --rollback [options]
#
# RELEASE is a release tarball (zeroclaw-bridge_<version>_linux_<arch>.tar.gz)
# or its extracted directory; without it, the directory this script is in
# (install.sh inside an extracted release). A SHA256SUMS beside the tarball
# is checked; the release's architecture is checked against the host's.
#
# It installs:
#   /usr/local/bin/zeroclaw-bridge                      the binary
#   /etc/systemd/system/zeroclaw-bridge.service         the unit (Type=notify)
#   /etc/zeroclaw-bridge/env                            the settings (kept if present)
#   /etc/zeroclaw-bridge/env.example                    every common setting, commented
#   /usr/local/share/doc/zeroclaw-bridge/               README, docs/, systemd/, RELEASE
# The unit runs the bridge as User=root (HOME=/root), as bridge.py ran.
# An existing zeroclaw-bridge.service (bridge.py's) keeps its settings: its
# Environment= lines are added to /etc/zeroclaw-bridge/env (settings already
# there win), and its EnvironmentFile=, User=, Group= and WorkingDirectory=
# lines are kept in the new unit. The docs' drop-in 10-go-bridge.conf is
# removed (the unit does what it did); other drop-ins are left alone.
# Everything it changes is kept under /var/lib/zeroclaw-bridge/backup/ first
# (the last 5 installs), with the checksum of each file as the install
# leaves it. --rollback puts back what the last install changed, and a
# second --rollback what the one before it changed. The binary, the unit,
# the drop-in, env.example and the docs belong to the install and are put
# back even when changed since; a unit or drop-in edited since (systemctl
# edit --full) is saved beside it first, as FILE.after-install (0600). The
# env file holds the operator's settings: edited since the install, it is
# kept, and the version from before the install is written beside it, as
# FILE.before-install (0600). It prints what it does with each file, then
# restarts what ran before; the snapshot is deleted only once that worked
# (else it is kept, and --rollback again finishes the job). Each file is
# copied beside its place and renamed over it, so a failed copy (a full
# disk) leaves the file as it was.
# An install ends with systemctl daemon-reload, enable, restart, and a wait
# for /health.
#
# Options:
#   --rollback   undo the last install (see above) and restart what was there
#   --dry-run    print every action (and the unit and env changes) and change nothing
#   --root DIR   install under DIR instead of / (for tests and images); systemctl
#                is not run then, only printed
#   --no-start   install and enable, but do not (re)start the service
#   --wait SEC   how long to wait for /health after the restart (default 45)
#   --force      install even when the architecture check fails
#   -h, --help   this text
#
# Exit status: 0 done (or nothing to do), 1 failure, 2 usage, 3 wrong
# architecture, 4 checksum mismatch, 5 nothing to roll back, 6 installed but
# the service did not become healthy (see journalctl -u zeroclaw-bridge;
# --rollback goes back).
set -euo pipefail
umask 022

readonly unit_name=zeroclaw-bridge.service
readonly keep_snapshots=5
readonly marker="# Installed by zeroclaw-bridge's install.sh"

self_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() {
  local code="$1"
  shift
  echo "install.sh: error: $*" >&2
  exit "$code"
}
warn() { echo "install.sh: warning: $*" >&2; }
say() { echo "install.sh: $*"; }

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

# ── arguments ─────────────────────────────────────────────────────────────
mode=install dry=false root=/ start=true force=false release="" wait=45
while [ $# -gt 0 ]; do
  case "$1" in
    --rollback) mode=rollback ;;
    --dry-run) dry=true ;;
    --root)
      [ $# -ge 2 ] || die 2 "--root needs a directory"
      root="$2"
      shift
      ;;
    --root=*) root="${1#--root=}" ;;
    --no-start) start=false ;;
    --wait)
      if [ $# -lt 2 ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then die 2 "--wait needs a number of seconds"; fi
      wait="$2"
      shift
      ;;
    --force) force=true ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*) die 2 "unknown option $1 (see --help)" ;;
    *)
      [ -z "$release" ] || die 2 "more than one release given: $release, $1"
      release="$1"
      ;;
  esac
  shift
done
[ "$mode" = install ] || [ -z "$release" ] || die 2 "--rollback takes no release"
[ -d "$root" ] || die 2 "--root $root is not a directory"
root="$(cd "$root" && pwd)"
# R prefixes every installed path; it is empty for the real root.
R="${root%/}"
live=false
[ "$root" = / ] && live=true

own=()
if [ "$(id -u)" -eq 0 ]; then
  own=(-o 0 -g 0)
elif $live && ! $dry; then
  die 1 "run as root (sudo), or use --root DIR or --dry-run"
fi

bin_path=usr/local/bin/zeroclaw-bridge
unit_path=etc/systemd/system/$unit_name
dropin_dir=etc/systemd/system/$unit_name.d
old_dropin=$dropin_dir/10-go-bridge.conf
conf_dir=etc/zeroclaw-bridge
env_path=$conf_dir/env
example_path=$conf_dir/env.example
doc_dir=usr/local/share/doc/zeroclaw-bridge
backup_dir=var/lib/zeroclaw-bridge/backup
managed_files=("$bin_path" "$unit_path" "$old_dropin" "$env_path" "$example_path")
managed_trees=("$doc_dir")

tmp="$(mktemp -d)"
# rollback_snap is the snapshot a rollback in progress applies; the exit
# trap says how to finish the rollback when it stops half-way.
rollback_snap=""

on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$rollback_snap" ] && ! $dry; then
    echo "install.sh: error: the rollback did not finish; the snapshot /$backup_dir/$(basename "$rollback_snap") is kept." >&2
    echo "  Fix the cause above, then run $0 --rollback${R:+ --root $root} again to finish it." >&2
  fi
  rm -rf "$tmp"
}
trap on_exit EXIT

# act runs a command that changes the system, printing it first; with
# --dry-run it only prints.
act() {
  if $dry; then
    echo "would run: $*"
  else
    echo "+ $*"
    "$@"
  fi
}

# sysctl runs systemctl on the live root; elsewhere (or without systemctl)
# it only prints.
sysctl() {
  if ! $live; then
    echo "skipped (root is $root): systemctl $*"
  elif ! command -v systemctl >/dev/null 2>&1; then
    echo "skipped (no systemctl): systemctl $*"
  else
    act systemctl "$@"
  fi
}

# ── unit and env parsing ──────────────────────────────────────────────────

# unit_lines FILE...: the [Service] lines of unit files, continuations
# joined, comments and blank lines dropped, as "Key=value".
unit_lines() {
  awk '
    FNR == 1 { section = ""; buf = "" }
    {
      line = $0
      if (buf != "") { line = buf line; buf = "" }
      if (line ~ /\\$/) { buf = substr(line, 1, length(line) - 1) " "; next }
      sub(/^[ \t]+/, "", line); sub(/[ \t]+$/, "", line)
      if (line == "" || line ~ /^[#;]/) next
      if (line ~ /^\[.*\]$/) { section = line; next }
      if (section != "[Service]") next
      eq = index(line, "=")
      if (eq == 0) next
      key = substr(line, 1, eq - 1); val = substr(line, eq + 1)
      sub(/[ \t]+$/, "", key); sub(/^[ \t]+/, "", val)
      print key "=" val
    }' "$@"
}

# env_words VALUE: splits an Environment= value into its assignments, one
# per line, the way systemd does: whitespace separates, single and double
# quotes group, backslash escapes (C style) are undone.
env_words() {
  local s="$1" out="" c q="" i=0 n=${#1} inword=false
  while [ "$i" -lt "$n" ]; do
    c="${s:i:1}"
    if [ "$c" = "\\" ] && [ $((i + 1)) -lt "$n" ]; then
      i=$((i + 1))
      c="${s:i:1}"
      case "$c" in
        n) c=$'\n' ;;
        t) c=$'\t' ;;
        r) c=$'\r' ;;
        s) c=' ' ;;
      esac
      out+="$c"
      inword=true
    elif [ -n "$q" ]; then
      if [ "$c" = "$q" ]; then q=""; else out+="$c"; fi
    elif [ "$c" = '"' ] || [ "$c" = "'" ]; then
      q="$c"
      inword=true
    elif [ "$c" = ' ' ] || [ "$c" = $'\t' ]; then
      if $inword; then
        printf '%s\n' "$out"
        out="" inword=false
      fi
    else
      out+="$c"
      inword=true
    fi
    i=$((i + 1))
  done
  [ -z "$q" ] || warn "unterminated quote in Environment=$s"
  if $inword; then printf '%s\n' "$out"; fi
}

# env_quote VALUE: VALUE as an EnvironmentFile= value systemd reads back
# unchanged (bash reads it the same way).
env_quote() {
  local v="$1"
  if [[ "$v" =~ ^[A-Za-z0-9_@%+=:,./~^-]*$ ]]; then
    printf '%s' "$v"
  elif [[ "$v" != *"'"* ]]; then
    printf "'%s'" "$v"
  else
    v="${v//\\/\\\\}"
    v="${v//\"/\\\"}"
    v="${v//\$/\\\$}"
    v="${v//\`/\\\`}"
    printf '"%s"' "$v"
  fi
}

# env_has FILE NAME: FILE assigns NAME on an uncommented line.
env_has() {
  [ -f "$1" ] && grep -Eq "^[[:space:]]*$2[[:space:]]*=" "$1"
}

# ── release ───────────────────────────────────────────────────────────────

# host_arches: the release architectures this host runs.
host_arches() {
  local m d=""
  m="$(uname -m)"
  if command -v dpkg >/dev/null 2>&1; then d="$(dpkg --print-architecture 2>/dev/null || true)"; fi
  case "$m" in
    x86_64 | amd64) echo amd64 ;;
    aarch64 | arm64)
      echo arm64
      # A 32-bit Raspberry Pi OS on a 64-bit kernel runs both.
      [ "$d" != armhf ] || echo armv7
      ;;
    armv7l | armv8l) echo armv7 ;;
    armv6l) echo armv6 ;;
    *) echo "$m" ;;
  esac
}

# release_value KEY: a line of the release's RELEASE file.
release_value() { sed -n "s/^$1=//p" "$rel/RELEASE" | head -n 1; }

load_release() {
  local src="$release" sums base want got
  if [ -z "$src" ]; then
    if [ ! -f "$self_dir/RELEASE" ] || [ ! -f "$self_dir/zeroclaw-bridge" ]; then
      die 2 "no release given, and $self_dir is not an extracted release (see --help)"
    fi
    src="$self_dir"
  fi
  if [ -d "$src" ]; then
    rel="$(cd "$src" && pwd)"
  elif [ -f "$src" ]; then
    base="$(basename "$src")"
    sums="$(dirname "$src")/SHA256SUMS"
    if [ -f "$sums" ]; then
      want="$(awk -v f="$base" '{ n = $2; sub(/^\*/, "", n) } n == f { print $1; exit }' "$sums")"
      [ -n "$want" ] || die 4 "$sums does not list $base"
      got="$(sha256sum "$src" | cut -d' ' -f1)"
      [ "$got" = "$want" ] || die 4 "$base: checksum $got, but SHA256SUMS says $want (a damaged or altered download)"
      say "checksum of $base matches SHA256SUMS"
    else
      warn "no SHA256SUMS beside $base: its checksum is not checked"
    fi
    mkdir "$tmp/release"
    tar -xzf "$src" -C "$tmp/release" || die 1 "cannot extract $src"
    local dirs=("$tmp"/release/*/)
    if [ ${#dirs[@]} -ne 1 ] || [ ! -d "${dirs[0]}" ]; then
      die 1 "$src: want one top directory in the tarball"
    fi
    rel="${dirs[0]%/}"
  else
    die 2 "release $src: no such file or directory"
  fi
  for f in RELEASE zeroclaw-bridge env.example systemd/$unit_name README.md; do
    [ -e "$rel/$f" ] || die 1 "$src is not a zeroclaw-bridge release: $f is missing"
  done
  new_version="$(release_value version)"
  local arch
  arch="$(release_value arch)"
  if ! grep -qx "$arch" <<<"$(host_arches)"; then
    if $force; then
      warn "the release is for $arch, this host runs $(host_arches | paste -sd, -); installing anyway (--force)"
    else
      die 3 "the release is for linux/$arch, but this host runs $(host_arches | paste -sd/ -) (uname -m: $(uname -m)); download the $(host_arches | head -n 1) tarball, or pass --force"
    fi
  fi
  if ! $force; then
    "$rel/zeroclaw-bridge" version >/dev/null 2>&1 ||
      die 3 "$rel/zeroclaw-bridge does not run on this host (wrong architecture or a damaged file)"
  fi
  say "release: zeroclaw-bridge $new_version for linux/$arch ($(release_value commit | cut -c1-12), $(release_value date))"
}

# ── the new state, staged under $tmp/new ──────────────────────────────────

stage() {
  local new="$tmp/new" cur_unit="$R/$unit_path" sources=() line key val word name
  mkdir -p "$new/$(dirname "$bin_path")" "$new/$(dirname "$unit_path")" "$new/$conf_dir" "$new/$doc_dir/docs"
  cp "$rel/zeroclaw-bridge" "$new/$bin_path"
  chmod 0755 "$new/$bin_path"

  # What the current unit (and the drop-in that goes away) sets.
  [ -f "$cur_unit" ] && sources+=("$cur_unit")
  [ -f "$R/$old_dropin" ] && sources+=("$R/$old_dropin")
  local envs=() envfiles=() keep=()
  if [ ${#sources[@]} -gt 0 ]; then
    if grep -qxF "$marker" "$cur_unit" 2>/dev/null; then
      say "found a unit installed by this script (zeroclaw-bridge $(sed -n 's/^# Release: //p' "$cur_unit" | head -n 1))"
    elif grep -Eq '^[[:space:]]*ExecStart[[:space:]]*=.*(python|uvicorn|bridge\.py)' "${sources[@]}"; then
      say "found bridge.py's unit: its settings are carried over"
    else
      say "found an existing $unit_name: its settings are carried over"
    fi
    while IFS= read -r line; do
      key="${line%%=*}" val="${line#*=}"
      case "$key" in
        Environment)
          if [ -z "$val" ]; then envs=(); else
            while IFS= read -r word; do envs+=("$word"); done < <(env_words "$val")
          fi
          ;;
        EnvironmentFile)
          case "${val#-}" in
            "") envfiles=() ;;
            /etc/zeroclaw-bridge/env | /etc/zeroclaw-bridge/secrets.env) ;;
            *) envfiles+=("$val") ;;
          esac
          ;;
        User | Group | WorkingDirectory) keep+=("$key=$val") ;;
      esac
    done < <(unit_lines "${sources[@]}")
  fi

  # The unit: the release's, stamped, with the kept lines after its own
  # EnvironmentFile= lines (so the old files still win over ours, as they
  # won over Environment= before).
  local extra="$tmp/extra"
  : >"$extra"
  for val in "${envfiles[@]+"${envfiles[@]}"}"; do
    printf 'EnvironmentFile=%s\n' "$val" >>"$extra"
  done
  # Last one of each key wins, as in systemd. A kept User= replaces the
  # release's (HOME follows it); one that says the same is left to the
  # release's line, so a second install writes the same unit.
  local k seen=" " rel_user drop_user=0
  local i
  rel_user="$(unit_lines "$rel/systemd/$unit_name" | sed -n 's/^User=//p' | tail -n 1)"
  for ((i = ${#keep[@]} - 1; i >= 0; i--)); do
    k="${keep[i]%%=*}"
    case "$seen" in *" $k "*) continue ;; esac
    seen+="$k "
    if [ "$k" = User ]; then
      [ "${keep[i]#User=}" != "$rel_user" ] || continue
      drop_user=1
    fi
    printf '%s\n' "${keep[i]}" >>"$tmp/keep.rev"
  done
  [ -f "$tmp/keep.rev" ] && tac "$tmp/keep.rev" >>"$extra"
  {
    echo "$marker"
    echo "# Release: $new_version"
    echo "# Edit settings in /etc/zeroclaw-bridge/env, not here: a new install rewrites this file."
    awk -v extra="$extra" -v drop_user="$drop_user" '
      drop_user && /^User=/ { next }
      { print }
      /^EnvironmentFile=-\/etc\/zeroclaw-bridge\/secrets.env$/ && (getline l < extra) > 0 {
        print "# Kept from the previous unit:"
        print l
        while ((getline l < extra) > 0) print l
      }' "$rel/systemd/$unit_name"
  } >"$new/$unit_path"
  if [ -s "$extra" ] && ! grep -q '^# Kept from the previous unit:$' "$new/$unit_path"; then
    die 1 "the release's unit has no EnvironmentFile=-/etc/zeroclaw-bridge/secrets.env line to keep settings after"
  fi

  # The env file: the current one, or the example, plus every carried
  # Environment= setting it does not set yet.
  if [ -f "$R/$env_path" ]; then
    cp "$R/$env_path" "$new/$env_path"
  else
    cp "$rel/env.example" "$new/$env_path"
  fi
  local added=() seen_names=" "
  for ((i = ${#envs[@]} - 1; i >= 0; i--)); do
    word="${envs[i]}"
    name="${word%%=*}"
    if [[ "$word" != *=* ]] || ! [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      warn "ignoring Environment= word '$word': not NAME=value"
      continue
    fi
    case "$seen_names" in *" $name "*) continue ;; esac # a later assignment won
    seen_names+="$name "
    env_has "$new/$env_path" "$name" && continue
    val="${word#*=}"
    if [[ "$val" == *%* ]]; then
      local stripped="${val//%%/}"
      [[ "$stripped" != *%* ]] || warn "$name=$val uses a systemd specifier (%x): it is copied as is; check /etc/zeroclaw-bridge/env"
      val="${val//%%/%}"
    fi
    added=("$name=$(env_quote "$val")" "${added[@]+"${added[@]}"}")
  done
  if [ ${#added[@]} -gt 0 ]; then
    {
      echo
      echo "# Carried over from the previous $unit_name (Environment= lines):"
      printf '%s\n' "${added[@]}"
    } >>"$new/$env_path"
    say "carrying over ${#added[@]} setting(s): $(printf '%s\n' "${added[@]}" | cut -d= -f1 | paste -sd' ' -)"
  fi

  cp "$rel/env.example" "$new/$example_path"
  cp "$rel/README.md" "$rel/RELEASE" "$new/$doc_dir/"
  if [ -d "$rel/docs" ]; then cp "$rel"/docs/*.md "$new/$doc_dir/docs/" 2>/dev/null || true; fi
  if [ -d "$rel/systemd" ]; then cp -R "$rel/systemd" "$new/$doc_dir/systemd"; fi

  # Drop-ins that stay may still override what the unit sets.
  if [ -d "$R/$dropin_dir" ]; then
    local f
    for f in "$R/$dropin_dir"/*.conf; do
      if [ ! -f "$f" ] || [ "$f" = "$R/$old_dropin" ]; then continue; fi
      if unit_lines "$f" | grep -Eq '^(ExecStart|Type)='; then
        warn "$f sets ExecStart= or Type= and stays in place: check it still fits the Go bridge"
      fi
    done
  fi
}

# mode_of FILE: its permission bits.
mode_of() { stat -c %a "$1"; }

# differs REL: the staged REL is not what is installed.
differs() {
  local rel_path="$1" new="$tmp/new/$1" cur="$R/$1"
  if [ -d "$new" ]; then
    [ -d "$cur" ] || return 0
    if diff -r -q "$new" "$cur" >/dev/null 2>&1; then return 1; fi
    return 0
  elif [ -e "$new" ]; then
    [ -f "$cur" ] || return 0
    ! cmp -s "$new" "$cur" && return 0
    local want
    case "$rel_path" in
      "$env_path") want=600 ;;
      "$bin_path") want=755 ;;
      *) want=644 ;;
    esac
    [ "$(mode_of "$cur")" != "$want" ]
  else
    [ -e "$cur" ]
  fi
}

# ── snapshots ─────────────────────────────────────────────────────────────

# parents REL: the directories above REL, deepest first, up to the root.
parents() {
  local d
  d="$(dirname "$1")"
  while [ "$d" != . ] && [ "$d" != / ]; do
    echo "$d"
    d="$(dirname "$d")"
  done
}

service_state() {
  local enabled=unknown active=unknown
  if $live && command -v systemctl >/dev/null 2>&1; then
    enabled="$(systemctl is-enabled "$unit_name" 2>/dev/null || true)"
    active="$(systemctl is-active "$unit_name" 2>/dev/null || true)"
  fi
  echo "enabled ${enabled:-unknown}"
  echo "active ${active:-unknown}"
}

# snapshots: the snapshot directories, oldest first.
snapshots() {
  if [ -d "$R/$backup_dir" ]; then
    find "$R/$backup_dir" -mindepth 1 -maxdepth 1 -type d -name '[0-9][0-9][0-9][0-9]' | sort
  fi
}

# state_sum PATH: what is at PATH, as one word: "absent", a file's SHA-256,
# or for a directory the SHA-256 of its file names and their checksums.
state_sum() {
  if [ -d "$1" ]; then
    (cd "$1" && find . \( -type f -o -type l \) -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) |
      sha256sum | cut -d' ' -f1
  elif [ -e "$1" ]; then
    sha256sum <"$1" | cut -d' ' -f1
  else
    echo absent
  fi
}

# snapshot REL...: keeps what the install will replace of the paths REL
# (the ones it changes), the checksum of each as the install leaves it, and
# which directories it will create, under $backup_dir/NNNN.
snapshot() {
  local last n snap p d
  last="$(snapshots | tail -n 1)"
  n=1
  [ -z "$last" ] || n=$((10#$(basename "$last") + 1))
  snap="$R/$backup_dir/$(printf '%04d' "$n")"
  local manifest="$tmp/manifest"
  {
    # Format 2: only the paths the install changes, each with its
    # "installed" checksum; rollback leaves a path alone when it has
    # changed since.
    echo "format 2"
    echo "from $(if [ -x "$R/$bin_path" ]; then v="$("$R/$bin_path" version 2>/dev/null)" && head -n 1 <<<"$v" || echo unknown; elif [ -f "$R/$unit_path" ]; then echo "bridge.py or another $unit_name"; else echo nothing; fi)"
    echo "to zeroclaw-bridge $new_version"
    service_state
    for p in "$@"; do
      if [ -e "$R/$p" ]; then echo "keep $p"; else echo "absent $p"; fi
      echo "installed $(state_sum "$tmp/new/$p") $p"
    done
    # Directories the install creates go away again on rollback.
    for p in "${managed_files[@]}" "${managed_trees[@]}" "$backup_dir/x"; do
      while IFS= read -r d; do
        [ -d "$R/$d" ] || echo "newdir $d"
      done < <(parents "$p")
    done | awk '!seen[$0]++'
  } >"$manifest"
  say "keeping the current state in /$backup_dir/$(basename "$snap") for --rollback"
  # 0700: the old unit and env file may hold keys.
  act install -d -m 0700 "$R/$backup_dir" "$snap" "$snap/files"
  while read -r what p; do
    [ "$what" = keep ] || continue
    act mkdir -p "$snap/files/$(dirname "$p")"
    act cp -a "$R/$p" "$snap/files/$p"
  done <"$manifest"
  act cp "$manifest" "$snap/manifest"
  # Only the newest few are kept.
  local old
  while IFS= read -r old; do
    act rm -rf "$old"
  done < <(snapshots | head -n -"$keep_snapshots")
}

# ── install ───────────────────────────────────────────────────────────────

put() { # put REL MODE: the staged REL into place, atomically for files.
  local rel_path="$1" mode="$2" dst="$R/$1"
  act mkdir -p "$(dirname "$dst")"
  act install -m "$mode" "${own[@]+"${own[@]}"}" "$tmp/new/$rel_path" "$dst.new"
  act mv -f "$dst.new" "$dst"
}

show_diff() { # show_diff REL: with --dry-run, what changes in a text file.
  $dry || return 0
  if [ -f "$R/$1" ]; then
    diff -u --label "/$1 (now)" --label "/$1 (new)" "$R/$1" "$tmp/new/$1" || true
  else
    echo "--- /$1 (new file)"
    sed 's/^/+/' "$tmp/new/$1"
  fi
}

# unit_env NAME: NAME's value from the installed unit's environment files,
# in their order (the last one wins, as in systemd).
unit_env() {
  local f v="" line
  while IFS= read -r f; do
    f="$R${f#-}"
    [ -r "$f" ] || continue
    line="$(grep -E "^[[:space:]]*$1[[:space:]]*=" "$f" | tail -n 1)" || continue
    v="${line#*=}"
    v="${v#"${v%%[![:space:]]*}"}"
    v="${v%"${v##*[![:space:]]}"}"
    case "$v" in \"*\" | \'*\') v="${v:1:${#v}-2}" ;; esac
  done < <(unit_lines "$R/$unit_path" | sed -n 's/^EnvironmentFile=//p')
  printf '%s' "$v"
}

wait_healthy() {
  local port host deadline
  port="$(unit_env PORT)"
  port="${port:-8080}"
  host="$(unit_env BRIDGE_HOST)"
  case "$host" in "" | 0.0.0.0 | :: | "[::]") host=127.0.0.1 ;; esac
  deadline=$((SECONDS + wait))
  say "waiting for http://$host:$port/health"
  while [ $SECONDS -lt $deadline ]; do
    if systemctl is-active --quiet "$unit_name" &&
      timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port && printf 'GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && head -n 1 <&3 | grep -q ' 200 '" 2>/dev/null; then
      say "zeroclaw-bridge is up: $(timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port && printf 'GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && tail -n 1 <&3" 2>/dev/null | cut -c1-200)"
      return 0
    fi
    sleep 1
  done
  echo "install.sh: error: zeroclaw-bridge did not answer /health within $wait s." >&2
  echo "  See: journalctl -u zeroclaw-bridge -n 50 --no-pager" >&2
  echo "  Go back: $0 --rollback" >&2
  exit 6
}

do_install() {
  load_release
  stage
  local changed=() p
  for p in "${managed_files[@]}" "${managed_trees[@]}"; do
    if differs "$p"; then changed+=("$p"); fi
  done
  if [ ${#changed[@]} -eq 0 ]; then
    say "zeroclaw-bridge $new_version is installed already under $root; nothing to do"
    return 0
  fi
  say "changing: $(printf '/%s ' "${changed[@]}")"
  $dry && say "dry run: nothing is changed"
  snapshot "${changed[@]}"
  show_diff "$unit_path"
  show_diff "$env_path"
  for p in "${changed[@]}"; do
    case "$p" in
      "$bin_path") put "$p" 0755 ;;
      "$env_path") put "$p" 0600 ;;
      "$old_dropin")
        act rm -f "$R/$p"
        act rmdir --ignore-fail-on-non-empty "$R/$dropin_dir"
        ;;
      "$doc_dir")
        act rm -rf "$R/$p"
        act mkdir -p "$(dirname "$R/$p")"
        act cp -R "$tmp/new/$p" "$R/$p"
        act chmod -R u=rwX,go=rX "$R/$p"
        if [ ${#own[@]} -gt 0 ]; then act chown -R 0:0 "$R/$p"; fi
        ;;
      *) put "$p" 0644 ;;
    esac
  done
  sysctl daemon-reload
  sysctl enable "$unit_name"
  if $start; then
    sysctl restart "$unit_name"
    if $live && ! $dry && command -v systemctl >/dev/null 2>&1; then wait_healthy; fi
  fi
  say "done: zeroclaw-bridge $new_version installed$($dry && echo ' (dry run: nothing was changed)')"
  say "settings: /$env_path; logs: journalctl -u zeroclaw-bridge -f; undo: $0 --rollback${R:+ --root $root}"
}

# ── rollback ──────────────────────────────────────────────────────────────

# beside PATH SUFFIX: a free name beside PATH: PATH.SUFFIX, else
# PATH.SUFFIX.2, .3, ...
beside() {
  local b="$1.$2" i=2
  while [ -e "$b" ] || [ -L "$b" ]; do
    b="$1.$2.$i"
    i=$((i + 1))
  done
  printf '%s' "$b"
}

# saved_beside PATH SUFFIX SUM: the copy beside PATH (PATH.SUFFIX*) whose
# checksum is SUM, if there is one: a rollback run again after a failure
# writes no second copy.
saved_beside() {
  local f
  for f in "$1.$2" "$1.$2".*; do
    if [ -e "$f" ] && [ "$(state_sum "$f")" = "$3" ]; then
      printf '%s' "$f"
      return 0
    fi
  done
  return 1
}

# copy_beside SRC REL SUFFIX SUM WHAT: a copy of SRC beside /REL as
# REL.SUFFIX (0600), unless the copy with checksum SUM is there already
# (saved_beside); says "WHAT goes to" or "WHAT is at" the copy.
copy_beside() {
  local src="$1" rel="$2" suffix="$3" sum="$4" what="$5" dst
  if dst="$(saved_beside "$R/$rel" "$suffix" "$sum")"; then
    say "$what is at ${dst#"$R"} already"
  else
    dst="$(beside "$R/$rel" "$suffix")"
    say "$what goes to ${dst#"$R"}"
    act cp -a "$src" "$dst"
    act chmod 0600 "$dst"
  fi
}

# put_back SRC DST: SRC's copy into DST's place by way of DST.new in the
# same directory, so a copy that fails (a full disk) leaves DST as it was.
put_back() {
  local src="$1" dst="$2"
  act mkdir -p "$(dirname "$dst")"
  act rm -rf "$dst.new"
  if ! act cp -a "$src" "$dst.new"; then
    act rm -rf "$dst.new" || true
    echo "install.sh: error: cannot copy $src to ${dst#"$R"}.new; ${dst#"$R"} is left as it is" >&2
    return 1
  fi
  # mv cannot put a directory over a directory.
  if [ -d "$src" ]; then act rm -rf "$dst"; fi
  act mv -fT "$dst.new" "$dst"
}

# roll_back_path SNAP MANIFEST WHAT REL: puts REL back as it was before the
# install (WHAT: keep, from SNAP's copy, or absent). Most paths belong to
# the install and are put back whatever happened to them since; a unit or
# drop-in edited since (systemctl edit --full) is saved beside it first, as
# FILE.after-install. The env file holds the operator's settings: edited
# since the install, it is kept, and the copy from before the install is
# written beside it as FILE.before-install. Copies beside are 0600 (they
# may hold keys). Prints what it does.
roll_back_path() {
  local snap="$1" manifest="$2" what="$3" p="$4" now want before
  now="$(state_sum "$R/$p")"
  if grep -qx 'format 2' "$manifest"; then
    want="$(awk -v p="$p" '$1 == "installed" && $3 == p { print $2; exit }' "$manifest")"
  elif [ "$p" = "$env_path" ]; then
    # An older install.sh kept no checksums: the env file, the one file
    # operators edit, counts as edited unless it is as before the install.
    want=unknown
  else
    want="$now"
  fi
  before=absent
  [ "$what" = absent ] || before="$(state_sum "$snap/files/$p")"
  if [ "$now" = "$before" ] && [ "$what" = absent ]; then
    return 0 # gone already
  fi
  local edited=false
  if [ "$now" != "$want" ] && [ "$now" != "$before" ] && [ "$now" != absent ]; then edited=true; fi
  if $edited && [ "$p" = "$env_path" ]; then
    if [ "$what" = absent ]; then
      say "keeping /$p: it has changed since the install (it did not exist before it)"
    else
      copy_beside "$snap/files/$p" "$p" before-install "$before" "keeping /$p: it has changed since the install; the version from before the install"
    fi
    kept=$((kept + 1))
    return 0
  fi
  if $edited; then
    case "$p" in
      "$unit_path" | "$old_dropin")
        copy_beside "$R/$p" "$p" after-install "$now" "/$p has changed since the install: the install owns it, so it is put back; the edited version"
        saved=$((saved + 1))
        ;;
      *) say "/$p has changed since the install: the install owns it, so it is put back all the same" ;;
    esac
  fi
  if [ "$what" = keep ]; then
    say "restoring /$p (as it was before the install)"
    put_back "$snap/files/$p" "$R/$p"
  else
    say "removing /$p (the install created it)"
    act rm -rf "$R/$p"
  fi
  restored=$((restored + 1))
}

do_rollback() {
  local snap manifest d restored=0 kept=0 saved=0
  snap="$(snapshots | tail -n 1)"
  if [ -z "$snap" ] || [ ! -f "$snap/manifest" ]; then
    die 5 "nothing to roll back: no snapshot under /$backup_dir"
  fi
  manifest="$tmp/manifest"
  cp "$snap/manifest" "$manifest"
  say "rolling back $(sed -n 's/^to //p' "$manifest") to $(sed -n 's/^from //p' "$manifest") (/$backup_dir/$(basename "$snap"))"
  $dry && say "dry run: nothing is changed"
  rollback_snap="$snap"
  local was_enabled was_active
  was_enabled="$(sed -n 's/^enabled //p' "$manifest")"
  was_active="$(sed -n 's/^active //p' "$manifest")"
  if grep -qx "absent $unit_path" "$manifest"; then
    sysctl disable --now "$unit_name"
  else
    sysctl stop "$unit_name"
  fi
  local paths=() line
  mapfile -t paths < <(grep -E '^(keep|absent) ' "$manifest")
  for line in "${paths[@]+"${paths[@]}"}"; do
    roll_back_path "$snap" "$manifest" "${line%% *}" "${line#* }"
  done
  sysctl daemon-reload
  if ! grep -qx "absent $unit_path" "$manifest"; then
    case "$was_enabled" in
      enabled) sysctl enable "$unit_name" ;;
      disabled) sysctl disable "$unit_name" ;;
    esac
    if [ "$was_active" = active ] || { [ "$was_active" = unknown ] && $start; }; then
      if ! sysctl start "$unit_name"; then
        echo "install.sh: error: the files are rolled back, but $unit_name did not start." >&2
        echo "  See: systemctl status $unit_name; journalctl -u zeroclaw-bridge -n 50 --no-pager" >&2
        exit 1
      fi
    fi
  fi
  # Only now that the service is back is the snapshot let go.
  rollback_snap=""
  act rm -rf "$snap"
  # Directories the install created, deepest first, when empty.
  while read -r d; do
    if [ -d "$R/$d" ] && [ -z "$(ls -A "$R/$d")" ]; then act rmdir "$R/$d"; fi
  done < <(sed -n 's/^newdir //p' "$manifest" | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-)
  say "rolled back: $restored path(s) restored or removed ($saved edited one(s) saved beside as .after-install), $kept kept because they changed since the install$($dry && echo ' (dry run: nothing was changed)')"
}

if [ "$mode" = rollback ]; then do_rollback; else do_install; fi
