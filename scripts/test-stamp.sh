#!/usr/bin/env bash
# Tests scripts/stamp.sh's version in a throwaway git repository holding
# scripts/stamp.sh and packaging/VERSION, with fixed commit times:
#   - an untagged commit is v<packaging/VERSION>-dev.<commit time, UTC>-<sha12>;
#   - a tagged commit is exactly its tag; "-dirty" follows uncommitted changes;
#   - after the tag of packaging/VERSION, a later commit is the next patch's dev
#     version, with a warning to bump the file; once bumped, the file's again;
#   - VERSION=... wins; a malformed packaging/VERSION is an error naming it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
n=0
pass() { n=$((n + 1)); echo "test-stamp: ok: $*"; }
fail() { echo "test-stamp: FAIL: $*" >&2; exit 1; }

repo="$tmp/repo"
mkdir -p "$repo/scripts" "$repo/packaging"
cp "$here/stamp.sh" "$repo/scripts/"
printf '0.9.0\n' >"$repo/packaging/VERSION"
echo "a tracked file" >"$repo/README"
g() { git -C "$repo" -c user.name=t -c user.email=t@example.invalid -c tag.gpgSign=false -c commit.gpgSign=false "$@"; }
commit() { # commit UNIXTIME MESSAGE
  GIT_COMMITTER_DATE="@$1 +0000" GIT_AUTHOR_DATE="@$1 +0000" g commit -q --allow-empty -m "$2"
}
# version [ENV...]: the VERSION stamp.sh prints; its stderr goes to $tmp/err.
version() {
  env -u VERSION -u COMMIT -u SOURCE_DATE_EPOCH "$@" "$repo/scripts/stamp.sh" 2>"$tmp/err" | sed -n 's/^VERSION=//p'
}
sha12() { g rev-parse --short=12 HEAD; }

g init -q
g add -A
commit 1795735083 "first" # 2026-11-26 23:18:03 UTC
got="$(version)"
want="v0.9.0-dev.20261126231803-$(sha12)"
[ "$got" = "$want" ] || fail "untagged: $got, want $want"
[ ! -s "$tmp/err" ] || fail "untagged: unexpected stderr: $(cat "$tmp/err")"
pass "untagged: $got"

echo change >>"$repo/README"
got="$(version)"
[ "$got" = "$want-dirty" ] || fail "dirty: $got, want $want-dirty"
g checkout -q -- README
pass "uncommitted changes: $got"

g tag v0.9.0-rc.1
got="$(version)"
[ "$got" = v0.9.0-rc.1 ] || fail "tagged rc: $got"
g tag -a -m "release" v0.9.0
got="$(version)"
case "$got" in v0.9.0 | v0.9.0-rc.1) ;; *) fail "tagged: $got, want one of its tags" ;; esac
g tag -d v0.9.0-rc.1 >/dev/null
got="$(version)"
[ "$got" = v0.9.0 ] || fail "tagged: $got, want v0.9.0"
pass "a tagged commit is its tag ($got)"

commit 1795821483 "after the release" # a day later
got="$(version)"
want="v0.9.1-dev.20261127231803-$(sha12)"
[ "$got" = "$want" ] || fail "after the tag, file not bumped: $got, want $want"
grep -q 'packaging/VERSION says 0.9.0: bump it' "$tmp/err" || fail "no warning to bump packaging/VERSION: $(cat "$tmp/err")"
pass "after v0.9.0 with packaging/VERSION not bumped: $got, with a warning"

printf '0.10.0\n' >"$repo/packaging/VERSION"
g add packaging/VERSION
commit 1795907883 "begin 0.10.0"
got="$(version)"
want="v0.10.0-dev.20261128231803-$(sha12)"
[ "$got" = "$want" ] || fail "bumped: $got, want $want"
[ ! -s "$tmp/err" ] || fail "bumped: unexpected stderr: $(cat "$tmp/err")"
pass "packaging/VERSION bumped: $got"

got="$(version VERSION=v1.2.3)"
[ "$got" = v1.2.3 ] || fail "VERSION=v1.2.3 gave $got"
pass "VERSION= overrides"

printf 'v1.0\n' >"$repo/packaging/VERSION"
if version >/dev/null; then fail "a malformed packaging/VERSION was accepted"; fi
grep -q "packaging/VERSION says 'v1.0'" "$tmp/err" || fail "error does not name the file: $(cat "$tmp/err")"
pass "malformed packaging/VERSION: $(cat "$tmp/err")"

echo "test-stamp: $n passed, 0 failed"
