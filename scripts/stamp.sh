#!/usr/bin/env bash
# Prints the release stamps of the checkout it lives in, as shell assignments
# (eval "$(scripts/stamp.sh)"):
#
#   VERSION            $VERSION if set; else the tag on HEAD (v[0-9]*), exactly;
#                      else v<packaging/VERSION>-dev.<commit time>-<sha12>, e.g.
#                      v0.9.0-dev.20261126231803-070d4120760c: SemVer, after every
#                      earlier release and before v0.9.0 itself (the time is UTC,
#                      %Y%m%d%H%M%S, so two dev builds sort by commit time);
#                      "-dirty" is appended when tracked files differ from HEAD.
#                      packaging/VERSION holds the version being prepared (X.Y.Z);
#                      once it is tagged on an ancestor, dev builds say the next
#                      patch version (with a warning) until the file is bumped.
#                      After a pre-release tag of that version (or a later one),
#                      e.g. v0.9.0-rc.1, dev builds extend the tag's pre-release:
#                      v0.9.0-rc.1.dev.<commit time>-<sha12>, after v0.9.0-rc.1
#                      and before v0.9.0-rc.2 and v0.9.0.
#   COMMIT             the full commit hash (or $COMMIT)
#   SOURCE_DATE_EPOCH  the commit's time in seconds (or $SOURCE_DATE_EPOCH):
#                      every timestamp of a release is this one, so two builds
#                      of one commit are byte-identical
#   DATE               SOURCE_DATE_EPOCH as RFC 3339 UTC
#
# Outside a git checkout VERSION, COMMIT and SOURCE_DATE_EPOCH must be set.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "stamp: $*" >&2; exit 1; }

# dev_prefix: what a dev build's version starts with, before
# ".<commit time>-<sha12>": v<X.Y.Z>-dev for packaging/VERSION's X.Y.Z; when
# that version (or a later one) is tagged on an ancestor already, the patch
# version after that tag; when the nearest tag is a pre-release of that
# version or a later one (v0.9.0-rc.1), <tag>.dev, which sorts after it.
dev_prefix() {
  local file=packaging/VERSION want last core pre=""
  [ -f "$file" ] || die "$file is missing: it holds the version being prepared (X.Y.Z)"
  want="$(tr -d ' \t\r\n' <"$file")"
  [[ "$want" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]] ||
    die "$file says '$want': want a version X.Y.Z (no v, no suffix)"
  if last="$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null)"; then
    core="${last#v}"
    core="${core%%[-+]*}"
    # The pre-release: after "-", without any build metadata ("+...").
    case "${last#"v$core"}" in -*)
      pre="${last#"v$core"-}"
      pre="${pre%%+*}"
      ;;
    esac
    if [[ "$core" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] &&
      [ "$(printf '%s\n%s\n' "$core" "$want" | sort -V | tail -n 1)" = "$core" ]; then
      if [ -n "$pre" ] && [[ "$pre" =~ ^[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*$ ]]; then
        [ "$core" = "$want" ] ||
          echo "stamp: warning: $last is tagged already but $file says $want: bump it; building v$core-$pre.dev meanwhile" >&2
        printf 'v%s-%s.dev' "$core" "$pre"
        return
      fi
      if [ "$core" != "$want" ] || [ -z "$pre" ]; then
        local x y z
        IFS=. read -r x y z <<<"$core"
        echo "stamp: warning: $last is tagged already but $file says $want: bump it; building v$x.$y.$((z + 1))-dev meanwhile" >&2
        want="$x.$y.$((z + 1))"
      fi
    fi
  fi
  printf 'v%s-dev' "$want"
}

have_git=false
if command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
  have_git=true
fi

commit="${COMMIT:-}"
sde="${SOURCE_DATE_EPOCH:-}"
version="${VERSION:-}"
if $have_git; then
  [ -n "$commit" ] || commit="$(git rev-parse HEAD)"
  [ -n "$sde" ] || sde="$(git log -1 --format=%ct HEAD)"
  if [ -z "$version" ]; then
    dirty=""
    if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
      dirty="-dirty"
    fi
    if tag="$(git describe --tags --exact-match --match 'v[0-9]*' HEAD 2>/dev/null)"; then
      version="$tag$dirty"
    else
      prefix="$(dev_prefix)"
      stamp="$(TZ=UTC0 git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)"
      version="$prefix.$stamp-$(git rev-parse --short=12 HEAD)$dirty"
    fi
  fi
fi
[ -n "$version" ] || die "not a git checkout: set VERSION"
[ -n "$commit" ] || die "not a git checkout: set COMMIT"
[ -n "$sde" ] || die "not a git checkout: set SOURCE_DATE_EPOCH"
case "$sde" in *[!0-9]*) die "SOURCE_DATE_EPOCH=$sde is not a number of seconds" ;; esac
case "$version" in *[!A-Za-z0-9._+-]*) die "VERSION=$version: use letters, digits and . _ + - only" ;; esac

# GNU date, then BSD date.
date="$(date -u -d "@$sde" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$sde" +%Y-%m-%dT%H:%M:%SZ)"

printf 'VERSION=%s\nCOMMIT=%s\nSOURCE_DATE_EPOCH=%s\nDATE=%s\n' "$version" "$commit" "$sde" "$date"
