#!/usr/bin/env bash
# Builds the container image with podman (Debian's, as root; no Docker
# daemon needed) and tests it, then the compose snippet with podman-compose:
#
#   scripts/test-container.sh [DIST]
#   scripts/test-container.sh --bases     only make the base images (CI starts
#                                         this early, beside the release build)
#
#   1. the image, built from the Dockerfile with the release stamps; with
#      DIST (a scripts/release.sh output) its binary must be byte-identical
#      to the linux/amd64 release binary;
#   2. the image as it is (uid 10001, /data volume): /health, a
#      /api/message round trip, the HEALTHCHECK, then `podman stop` (SIGTERM)
#      and exit status 0;
#   3. packaging/compose.bridge.yml with its host paths pointed at a
#      temporary ZeroClaw directory and a stand-in `zeroclaw` (the bridge's
#      own demo agent): runs as root, the agent runs, brain.db is written in
#      the mounted directory, stop exits 0.
#
# Without a registry (CI, this sandbox) the two base images are stand-ins
# built locally and tagged localhost/zb-standin/...: debian:trixie-slim from
# debootstrap (the host's CA bundle added, for an egress proxy), golang from
# the host's Go toolchain. They are kept for the next run; remove them with
#   podman rmi -f $(podman images -q 'localhost/zb-standin/*')
# Podman settings for a container like this one (cgroup v1, no setrlimit
# beyond the current limits): runc and explicit ulimits, through a
# CONTAINERS_CONF of its own (nothing under /etc is changed).
#
# Exit status 0 also when podman cannot run containers on this host (it says
# SKIP and why); ZB_REQUIRE_CONTAINER=1 makes that a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bases_only=false
if [ "${1:-}" = --bases ]; then
  bases_only=true
  shift
fi
dist="${1:-}"
[ -z "$dist" ] || dist="$(cd "$dist" && pwd)"
export PATH="/usr/local/go/bin:$PATH"

say() { echo "container: $*"; }
fail() { echo "container: FAIL: $*" >&2; exit 1; }

tmp="$(mktemp -d)"
# Names carry the PID, so two runs on one machine (a loaded proof runs CI
# beside CI) never share or remove each other's image or container.
image="localhost/zeroclaw-bridge:citest$$"
project="zbct$$"
ctr="$project-image"
cleanup() {
  podman rm -f -v "$ctr" >/dev/null 2>&1 || true
  if [ -f "$tmp/compose.yml" ]; then podman-compose -p "$project" -f "$tmp/compose.yml" down >/dev/null 2>&1 || true; fi
  podman volume rm -f "${project}_bridge-data" >/dev/null 2>&1 || true
  podman network rm -f "${project}_dotty" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF="$tmp/containers.conf"

skip() {
  if [ "${ZB_REQUIRE_CONTAINER:-0}" = 1 ]; then fail "$*"; fi
  echo "container: SKIP: $*"
  exit 0
}
command -v podman >/dev/null 2>&1 || skip "podman is not installed"
command -v runc >/dev/null 2>&1 || skip "runc is not installed"

port() { # a free loopback port
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
# http PORT METHOD PATH [JSON]
http() {
  local req="$2 $3 HTTP/1.0\r\nHost: 127.0.0.1\r\n"
  if [ $# -ge 4 ]; then req+="Content-Type: application/json\r\nContent-Length: ${#4}\r\n\r\n$4"; else req+="\r\n"; fi
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout 20 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf "$1" >&3 && cat <&3' "$1" "$req"
}
wait_ready() { # wait_ready PORT
  local h
  for _ in $(seq 1 150); do
    if h="$(http "$1" GET /health 2>/dev/null)" && [[ "$h" == *'"state":"ready"'* ]]; then
      printf '%s\n' "$h" | tail -n 1
      return 0
    fi
    sleep 0.2
  done
  return 1
}
round_trip() { # round_trip PORT WORDS
  local r
  r="$(http "$1" POST /api/message "{\"content\":\"$2\",\"channel\":\"ci\",\"session_id\":\"ct\"}")"
  [[ "$r" == *"You said: \\\"$2\\\""* ]] || fail "/api/message: $r"
}

# ── base images ───────────────────────────────────────────────────────────
t0=$SECONDS
go_version="$(go env GOVERSION)"
standin_debian=localhost/zb-standin/debian:trixie-slim
standin_go="localhost/zb-standin/golang:${go_version#go}-trixie"
if ! podman image exists "$standin_debian"; then
  command -v debootstrap >/dev/null 2>&1 || skip "debootstrap is needed for the stand-in base image"
  say "building $standin_debian with debootstrap"
  debootstrap --variant=minbase trixie "$tmp/rootfs" http://deb.debian.org/debian >"$tmp/debootstrap.log" 2>&1 ||
    { tail -n 20 "$tmp/debootstrap.log" >&2; fail "debootstrap"; }
  rm -rf "$tmp"/rootfs/var/cache/apt/archives/*.deb "$tmp"/rootfs/var/lib/apt/lists/*
  mkdir -p "$tmp/rootfs/etc/ssl/certs" "$tmp/rootfs/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$tmp/rootfs/etc/ssl/certs/"
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$tmp/rootfs/usr/local/share/ca-certificates/"
  fi
  tar -C "$tmp/rootfs" -c . | podman import -q - "$standin_debian" >/dev/null
  rm -rf "$tmp/rootfs"
fi
if ! podman run --rm "$standin_debian" true 2>"$tmp/run.err"; then
  skip "podman cannot run a container here: $(tail -n 1 "$tmp/run.err")"
fi
if ! podman image exists "$standin_go"; then
  say "building $standin_go from $(go env GOROOT)"
  printf 'FROM %s\nCOPY . /usr/local/go\nENV GOPATH=/go PATH=/usr/local/go/bin:/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOTOOLCHAIN=local\nWORKDIR /go\n' \
    "$standin_debian" >"$tmp/Containerfile.go"
  podman build -q --pull=never --layers=false -f "$tmp/Containerfile.go" -t "$standin_go" "$(go env GOROOT)" >/dev/null
fi
say "base images ready ($((SECONDS - t0)) s)"
if $bases_only; then exit 0; fi

# ── build ─────────────────────────────────────────────────────────────────
t0=$SECONDS
eval "$(scripts/stamp.sh)"
# The host's module cache stands in for the module proxy's downloads (read
# only), which keeps the build from fetching every module again.
podman build --pull=never --layers=false --format docker --network host --platform linux/amd64 \
  --build-arg GO_IMAGE="$standin_go" --build-arg RUNTIME_IMAGE="$standin_debian" \
  --build-arg VERSION="$VERSION" --build-arg COMMIT="$COMMIT" --build-arg DATE="$DATE" \
  -v "$(go env GOMODCACHE):/go/pkg/mod:ro" \
  -t "$image" . >"$tmp/build.log" 2>&1 || { tail -n 30 "$tmp/build.log" >&2; fail "podman build"; }
say "built $image ($((SECONDS - t0)) s, $(podman image inspect "$image" --format '{{.Size}}' | awk '{ printf "%d MB", $1 / 1e6 }'))"

inspect="$(podman image inspect "$image" --format '{{.Config.User}}|{{.Config.StopSignal}}|{{index .Config.ExposedPorts "8080/tcp"}}|{{if .Config.Healthcheck}}hc{{end}}')"
[[ "$inspect" == "10001:10001|SIGTERM|"*"|hc" ]] || fail "image config: $inspect"
# (podman's "unable to get systemd connection" for healthcheck timers goes to
# $tmp/podman.err: there is no systemd to run them; `healthcheck run` below does.)
podman run --rm --entrypoint /usr/local/bin/zeroclaw-bridge "$image" version >"$tmp/version" 2>>"$tmp/podman.err"
grep -qx "zeroclaw-bridge $VERSION" "$tmp/version" || fail "image version: $(cat "$tmp/version")"
if [ -n "$dist" ]; then
  cid="$(podman create "$image" 2>>"$tmp/podman.err")"
  podman cp "$cid:/usr/local/bin/zeroclaw-bridge" "$tmp/image-bin"
  podman rm -v "$cid" >/dev/null 2>>"$tmp/podman.err"
  tar -xzf "$dist"/zeroclaw-bridge_*_linux_amd64.tar.gz -O --wildcards '*/zeroclaw-bridge' >"$tmp/release-bin"
  cmp -s "$tmp/image-bin" "$tmp/release-bin" ||
    fail "the image's binary differs from the release's ($(sha256sum "$tmp/image-bin" "$tmp/release-bin" | cut -c1-16 | paste -sd' ' -))"
  say "the image's binary is the release's, byte for byte ($(sha256sum "$tmp/image-bin" | cut -c1-16))"
fi

# ── the image as it is ────────────────────────────────────────────────────
p="$(port)"
podman run -d --name "$ctr" -p "127.0.0.1:$p:8080" -e WEATHER_LOCATION=- \
  -e VOICE_MEMORY_DB=/data/zeroclaw/brain.db "$image" >/dev/null 2>"$tmp/run.err" ||
  fail "podman run: $(cat "$tmp/run.err")"
wait_ready "$p" >/dev/null || { podman logs "$ctr" 2>&1 | tail -n 20 >&2; fail "image: no ready /health"; }
round_trip "$p" "hello image"
[ "$(podman exec "$ctr" id -u)" = 10001 ] || fail "the bridge does not run as 10001"
podman exec "$ctr" test -f /data/zeroclaw/brain.db || fail "no brain.db under /data"
podman healthcheck run "$ctr" 2>/dev/null || fail "HEALTHCHECK failed"
t1=$SECONDS
podman stop -t 60 "$ctr" >/dev/null 2>&1
code="$(podman inspect "$ctr" --format '{{.State.ExitCode}}')"
[ "$code" = 0 ] || { podman logs "$ctr" 2>&1 | tail -n 20 >&2; fail "exit status $code after SIGTERM"; }
# Read whole, then searched: `podman logs | grep -q` fails under pipefail
# when grep stops at an earlier "... stopped" line while podman still writes.
logs="$(podman logs "$ctr" 2>&1)"
grep -q ' zeroclaw-bridge: stopped:\|"@message":"stopped"' <<<"$logs" || fail "no 'stopped' log line: $(tail -n 5 <<<"$logs")"
podman rm -v "$ctr" >/dev/null 2>>"$tmp/podman.err"
say "image: uid 10001, /health, /api/message, HEALTHCHECK, SIGTERM -> exit 0 in $((SECONDS - t1)) s"

# ── the compose snippet ───────────────────────────────────────────────────
if ! command -v podman-compose >/dev/null 2>&1; then
  say "SKIP compose: podman-compose is not installed"
  exit 0
fi
mkdir -p "$tmp/host/.cargo/bin" "$tmp/host/.zeroclaw"
# The bridge's own demo agent stands in for ZeroClaw (`zeroclaw acp`).
printf '#!/bin/sh\nexec /usr/local/bin/zeroclaw-bridge "$@"\n' >"$tmp/host/.cargo/bin/zeroclaw"
chmod 0755 "$tmp/host/.cargo/bin/zeroclaw"
chmod 0700 "$tmp/host/.zeroclaw"
p="$(port)"
sed -e "s#^\([[:space:]]*- \)/root/.cargo/bin/zeroclaw:#\1$tmp/host/.cargo/bin/zeroclaw:#" \
  -e "s#^\([[:space:]]*- \)/root/.zeroclaw:#\1$tmp/host/.zeroclaw:#" \
  -e "s#\"8080:8080\"#\"127.0.0.1:$p:8080\"#" \
  -e "s#container_name: zeroclaw-bridge#container_name: $project-bridge#" \
  -e "s#image: zeroclaw-bridge:local\$#image: $image#" \
  packaging/compose.bridge.yml >"$tmp/compose.yml"
grep -q "$tmp/host/.zeroclaw:/root/.zeroclaw$" "$tmp/compose.yml" || fail "compose: the ZeroClaw mount was not found to redirect"
grep -q "image: $image$" "$tmp/compose.yml" || fail "compose: the image line was not found to redirect"
podman-compose -p "$project" -f "$tmp/compose.yml" up -d --no-build >"$tmp/compose.log" 2>&1 ||
  { cat "$tmp/compose.log" >&2; fail "podman-compose up"; }
health="$(wait_ready "$p")" || { podman logs "$project-bridge" 2>&1 | tail -n 20 >&2; fail "compose: no ready /health"; }
[[ "$health" == *'"command":"zeroclaw"'* ]] || fail "compose: the agent is not the mounted zeroclaw: $health"
round_trip "$p" "hello compose"
[ "$(podman exec "$project-bridge" id -u)" = 0 ] || fail "compose: not root"
[ -f "$tmp/host/.zeroclaw/workspace/memory/brain.db" ] || fail "compose: brain.db not written in the mounted ZeroClaw directory"
podman stop -t 60 "$project-bridge" >/dev/null 2>&1
code="$(podman inspect "$project-bridge" --format '{{.State.ExitCode}}')"
[ "$code" = 0 ] || fail "compose: exit status $code after SIGTERM"
say "compose: root, mounted zeroclaw as the agent, brain.db written read-write, SIGTERM -> exit 0"
