#!/usr/bin/env bash
# The release, container and installer checks CI runs (.ci/run calls this
# once). Every step is a script of its own that also runs alone:
#
#   tools        installs what is missing, from Debian: shellcheck, qemu-user-static,
#                systemd (systemd-analyze), podman, runc, podman-compose, catatonit,
#                debootstrap
#   lint         shellcheck on scripts/*.sh
#   stamp        scripts/test-stamp.sh: the version of an untagged, a tagged and a
#                later commit (packaging/VERSION), in a throwaway git repository
#   release      scripts/release.sh: linux/amd64, arm64, arm/v7 tarballs + SHA256SUMS
#   smoke        scripts/smoke-binary.sh on each binary: amd64 natively, arm64 and
#                armv7 under qemu-aarch64-static / qemu-arm-static (no binfmt needed)
#   envexample   scripts/check-env-example.sh: the example env file against -h
#   install      scripts/test-install.sh: throwaway roots, incl. an upgrade to a
#                second release built with --version, and systemd-analyze verify;
#                scripts/test-install-live.sh: the live root in a mount namespace
#                with overlays and a stand-in systemctl
#   dockerfile   scripts/check-dockerfile.sh (hadolint when installed)
#   container    scripts/test-container.sh: podman build (its amd64 binary, built
#                from nothing in a container, must be the release's, byte for
#                byte) + run + the compose snippet; its base images are made in
#                the background while the release builds
#   repro        the release again from a copy of the tree elsewhere: the same
#                SHA256SUMS; and, unless the container step compared a cold
#                build already, linux/arm/v7 with an empty Go cache
#
#   scripts/ci-release.sh [STEP...]     (default: all, in this order)
#
# Each step's time is printed, and a table of them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

all=(tools lint stamp release smoke envexample install dockerfile container repro)
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=("${all[@]}")

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dist="$work/dist"
timings=()

need_release() {
  [ -f "$dist/SHA256SUMS" ] || { echo "ci-release: building the release first"; step_release; }
}

step_tools() {
  local want=() sudo=""
  command -v shellcheck >/dev/null || want+=(shellcheck)
  if ! command -v qemu-aarch64-static >/dev/null || ! command -v qemu-arm-static >/dev/null; then
    want+=(qemu-user-static)
  fi
  if ! command -v systemd-analyze >/dev/null || [ ! -d /usr/lib/systemd/system ]; then want+=(systemd); fi
  command -v podman >/dev/null || want+=(podman)
  command -v runc >/dev/null || want+=(runc)
  command -v podman-compose >/dev/null || want+=(podman-compose)
  [ -x /usr/libexec/podman/catatonit ] || want+=(catatonit)
  command -v debootstrap >/dev/null || want+=(debootstrap)
  if [ ${#want[@]} -eq 0 ]; then
    echo "ci-release: tools present"
    return
  fi
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "ci-release: installing ${want[*]}"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
}

step_lint() {
  shellcheck scripts/*.sh
  echo "ci-release: shellcheck: scripts/*.sh clean"
}

step_stamp() {
  scripts/test-stamp.sh
}

bases_pid=""
step_release() {
  # The container step's base images (debootstrap: mostly network and disk)
  # are made meanwhile.
  if [[ " ${steps[*]} " == *" container "* ]] && command -v podman >/dev/null; then
    scripts/test-container.sh --bases >"$work/bases.log" 2>&1 &
    bases_pid=$!
  fi
  scripts/release.sh --out "$dist"
}

step_repro() {
  need_release
  # (a) All three again, from a copy of the tree at another path: the
  # packaging (tar order, times, owners, gzip) and the -trimpath'd binaries
  # must not change. The Go cache is warm here, so the compiler is not run
  # again; the container step rebuilt linux/amd64 from nothing and compared
  # it with the release's, byte for byte. Without that, (b) builds
  # linux/arm/v7 with an empty cache.
  mkdir -p "$work/src2"
  tar --exclude=./dist -cf - . | tar -xf - -C "$work/src2"
  "$work/src2/scripts/release.sh" --out "$work/dist2" >/dev/null
  if ! cmp -s "$dist/SHA256SUMS" "$work/dist2/SHA256SUMS"; then
    diff "$dist/SHA256SUMS" "$work/dist2/SHA256SUMS" >&2 || true
    echo "ci-release: FAIL: a second build of the same tree at another path differs" >&2
    return 1
  fi
  echo "ci-release: reproducible: the same tree at another path gives the same SHA256SUMS"
  if $cold_checked; then
    echo "ci-release: reproducible: linux/amd64 built from nothing in the container is the release's binary"
    rm -rf "$work/src2" "$work/dist2"
    return
  fi
  mkdir -p "$work/gocache"
  GOCACHE="$work/gocache" scripts/release.sh --platform linux/arm/v7 --out "$work/dist3" >/dev/null
  if ! grep -qxF "$(cat "$work/dist3/SHA256SUMS")" "$dist/SHA256SUMS"; then
    echo "ci-release: FAIL: linux/arm/v7 built with an empty Go cache differs: $(cat "$work/dist3/SHA256SUMS")" >&2
    return 1
  fi
  echo "ci-release: reproducible: linux/arm/v7 built with an empty Go cache is the same tarball"
  rm -rf "$work/src2" "$work/dist2" "$work/dist3" "$work/gocache"
}

extract() { # extract ARCH: the release's directory for ARCH
  local d="$work/x/$1"
  if [ ! -d "$d" ]; then
    mkdir -p "$d"
    tar -xzf "$dist"/zeroclaw-bridge_*_linux_"$1".tar.gz -C "$d"
  fi
  echo "$d"/*/
}

step_smoke() {
  need_release
  scripts/smoke-binary.sh "$(extract amd64)zeroclaw-bridge" linux/amd64
  scripts/smoke-binary.sh "$(extract arm64)zeroclaw-bridge" linux/arm64 qemu-aarch64-static
  scripts/smoke-binary.sh "$(extract armv7)zeroclaw-bridge" linux/arm/v7 qemu-arm-static
}

step_envexample() {
  need_release
  scripts/check-env-example.sh "$(extract amd64)zeroclaw-bridge"
}

step_install() {
  need_release
  local v
  v="$(sed -n 's/^version=//p' "$(extract amd64)RELEASE")"
  scripts/release.sh --platform linux/amd64 --version "$v.ci-upgrade" --out "$work/upgrade" >/dev/null
  scripts/test-install.sh "$dist" "$work"/upgrade/zeroclaw-bridge_*_linux_amd64.tar.gz
  scripts/test-install-live.sh "$dist"/zeroclaw-bridge_*_linux_amd64.tar.gz
}

step_dockerfile() {
  scripts/check-dockerfile.sh
}

cold_checked=false
step_container() {
  need_release
  if [ -n "$bases_pid" ]; then
    if ! wait "$bases_pid"; then
      cat "$work/bases.log" >&2
      echo "ci-release: FAIL: the base images" >&2
      return 1
    fi
    cat "$work/bases.log"
  fi
  scripts/test-container.sh "$dist" | tee "$work/container.log"
  if grep -q 'byte for byte' "$work/container.log"; then cold_checked=true; fi
}

total=$SECONDS
for s in "${steps[@]}"; do
  case " ${all[*]} " in *" $s "*) ;; *) echo "ci-release: unknown step $s (${all[*]})" >&2; exit 2 ;; esac
  echo "ci-release: ── $s"
  t0=$SECONDS
  "step_$s"
  timings+=("$(printf '%-12s %4d s' "$s" $((SECONDS - t0)))")
done
echo "ci-release: timings"
printf '  %s\n' "${timings[@]}"
printf '  %-12s %4d s\n' total $((SECONDS - total))
