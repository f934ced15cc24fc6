#!/usr/bin/env bash
# Builds the release: for each platform a tarball
#
#   dist/zeroclaw-bridge_<version>_linux_<arch>.tar.gz
#     zeroclaw-bridge_<version>_linux_<arch>/
#       zeroclaw-bridge          static (CGO_ENABLED=0), stripped, stamped
#       install.sh               the native installer (scripts/install.sh)
#       env.example              every common setting, commented, with its default
#       systemd/zeroclaw-bridge.service
#       systemd/zeroclaw-bridge.service.d/10-go-bridge.conf
#       README.md, docs/*.md     (links to docs/img screenshots become their
#                                 path in the source tree; every other relative
#                                 link must name a shipped file)
#       RELEASE                  name, version, commit, date, os, arch, go
#
# and dist/SHA256SUMS. Reproducible: every timestamp is the commit's
# (SOURCE_DATE_EPOCH), names are sorted, owners are 0/0, gzip stores no name
# or time, and the Go build is fixed (scripts/build-binary.sh), so two runs
# on one commit with one Go version give the same SHA256SUMS.
#
# Usage: scripts/release.sh [--out DIR] [--platform OS/ARCH[/vN]]... [--version V]
#   --out DIR       output directory (default dist); its old zeroclaw-bridge_*
#                   tarballs and SHA256SUMS are replaced
#   --platform P    build only P (repeatable); default linux/amd64,
#                   linux/arm64 and linux/arm/v7
#   --version V     version stamp instead of the tag or packaging/VERSION's dev
#                   version (same as VERSION=V; see scripts/stamp.sh)
# Needs go, git (or VERSION, COMMIT and SOURCE_DATE_EPOCH), GNU tar, gzip,
# sha256sum.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export LC_ALL=C TZ=UTC

die() { echo "release: $*" >&2; exit 1; }

out=dist
platforms=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --platform) [ $# -ge 2 ] || die "--platform needs OS/ARCH"; platforms+=("$2"); shift 2 ;;
    --version) [ $# -ge 2 ] || die "--version needs a value"; export VERSION="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ ${#platforms[@]} -gt 0 ] || platforms=(linux/amd64 linux/arm64 linux/arm/v7)

command -v go >/dev/null || die "go not found on PATH"
grep -q 'GNU tar' <<<"$(tar --version 2>/dev/null)" || die "GNU tar is needed (--sort, --mtime, --owner)"

eval "$(scripts/stamp.sh)"
export VERSION COMMIT DATE SOURCE_DATE_EPOCH
case "$VERSION" in *-dirty) echo "release: warning: the work tree has uncommitted changes; version $VERSION" >&2 ;; esac
echo "release: $VERSION ($COMMIT, $DATE) with $(go env GOVERSION)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
umask 022

# ship_doc SRC DST: a Markdown file for the release. The screenshots in
# docs/img are not shipped (2.6 MB, over a quarter of a tarball, and no use
# in a terminal on a Pi), so a link to an image there becomes its path in
# the source tree.
ship_doc() {
  sed -E \
    -e 's#!\[([^]]*)\]\((\.\./)?(docs/)?img/([^)]*)\)#(screenshot "\1": docs/img/\4 in the source tree)#g' \
    -e 's#<img src="(\.\./)?(docs/)?img/([^"]*)"[^>]*>#(screenshot: docs/img/\3 in the source tree)#g' \
    -e 's#\[([^]]*)\]\((\.\./)?(docs/)?img/([^)]*)\)#\1: docs/img/\4 in the source tree#g' \
    "$1" >"$2"
  chmod 0644 "$2"
}

# check_links DIR: every relative link of DIR's Markdown files names a file
# the release ships.
check_links() {
  local md target bad=()
  while IFS= read -r md; do
    while IFS= read -r target; do
      case "$target" in http://* | https://* | mailto:* | '#'* | '') continue ;; esac
      target="${target%%#*}"
      [ -e "$(dirname "$md")/$target" ] || bad+=("${md#"$1"/}: $target")
    done < <(grep -oE '\]\([^) ]+\)|src="[^"]+"' "$md" | sed -E 's/^\]\(//; s/\)$//; s/^src="//; s/"$//')
  done < <(find "$1" -name '*.md' | sort)
  [ ${#bad[@]} -eq 0 ] || die "the release's docs link files it does not ship: ${bad[*]}"
}

tarballs=()
for p in "${platforms[@]}"; do
  IFS=/ read -r goos goarch variant <<<"$p"
  goarm=""
  arch="$goarch"
  if [ "$goarch" = arm ]; then
    goarm="${variant#v}"
    [ -n "$goarm" ] || goarm=7
    arch="armv$goarm"
  elif [ -n "$variant" ]; then
    die "platform $p: only arm takes a variant"
  fi
  name="zeroclaw-bridge_${VERSION}_${goos}_${arch}"
  dir="$work/$name"
  mkdir -p "$dir/systemd/zeroclaw-bridge.service.d" "$dir/docs"

  echo "release: building $goos/$arch"
  scripts/build-binary.sh "$dir/zeroclaw-bridge" "$goos" "$goarch" "$goarm"
  chmod 0755 "$dir/zeroclaw-bridge"

  install -m 0755 scripts/install.sh "$dir/install.sh"
  install -m 0644 packaging/zeroclaw-bridge.env.example "$dir/env.example"
  install -m 0644 docs/systemd/zeroclaw-bridge.service "$dir/systemd/"
  install -m 0644 docs/systemd/zeroclaw-bridge.service.d/*.conf "$dir/systemd/zeroclaw-bridge.service.d/"
  ship_doc README.md "$dir/README.md"
  for f in docs/*.md; do ship_doc "$f" "$dir/$f"; done
  check_links "$dir"
  {
    echo "name=zeroclaw-bridge"
    echo "version=$VERSION"
    echo "commit=$COMMIT"
    echo "date=$DATE"
    echo "os=$goos"
    echo "arch=$arch"
    echo "go=$(go env GOVERSION)"
  } >"$dir/RELEASE"
  chmod 0644 "$dir/RELEASE"

  tarball="$work/$name.tar.gz"
  tar --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" \
    --owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' \
    -C "$work" -cf - "$name" | gzip -9 -n >"$tarball"
  tarballs+=("$name.tar.gz")
done

mkdir -p "$out"
rm -f "$out"/zeroclaw-bridge_*.tar.gz "$out/SHA256SUMS"
for t in "${tarballs[@]}"; do
  mv "$work/$t" "$out/$t"
done
(cd "$out" && sha256sum -- zeroclaw-bridge_*.tar.gz >SHA256SUMS)
echo "release: wrote $(cd "$root" && realpath --relative-to=. "$out" 2>/dev/null || echo "$out")/:"
sed 's/^/  /' "$out/SHA256SUMS"
