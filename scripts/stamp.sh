#!/usr/bin/env bash
# Prints the release stamps of the checkout it lives in, as shell assignments
# (eval "$(scripts/stamp.sh)"):
#
#   VERSION            $VERSION if set; else `git describe --tags --match 'v[0-9]*'`;
#                      else a Go-style pseudo-version v0.0.0-<commit time>-<sha12>;
#                      "-dirty" is appended when tracked files differ from HEAD
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
    if described="$(git describe --tags --match 'v[0-9]*' HEAD 2>/dev/null)"; then
      version="$described$dirty"
    else
      stamp="$(TZ=UTC0 git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd HEAD)"
      version="v0.0.0-$stamp-$(git rev-parse --short=12 HEAD)$dirty"
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
