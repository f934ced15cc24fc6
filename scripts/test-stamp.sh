#!/usr/bin/env bash
# Tests scripts/stamp.sh's version in a throwaway git repository holding
# scripts/stamp.sh and packaging/VERSION, with fixed commit times:
#   - an untagged commit is v<packaging/VERSION>-dev.<commit time, UTC>-<sha12>;
#   - a tagged commit is exactly its tag; "-dirty" follows uncommitted changes;
#   - after a pre-release tag of packaging/VERSION (v0.9.0-rc.1), a later
#     commit is v0.9.0-rc.1.dev.<time>-<sha12>: valid SemVer that sorts after
#     the tag and before v0.9.0-rc.2 and v0.9.0 (SemVer 2.0.0 precedence,
#     checked below); after a later version's pre-release (with build
#     metadata, dropped) the same, with a warning to bump the file;
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

# semver_valid V: V is "v" and a SemVer 2.0.0 version.
semver_valid() {
  local num='(0|[1-9][0-9]*)' id='(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)'
  [[ "$1" =~ ^v$num\.$num\.$num(-$id(\.$id)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$ ]]
}

# semver_lt A B: A has lower precedence than B (SemVer 2.0.0, section 11):
# the numbers, then a pre-release below none, then identifier by
# identifier (numbers numerically and below words, words in ASCII order),
# then the shorter list of identifiers first. Build metadata is ignored.
semver_lt() {
  local LC_ALL=C a="${1#v}" b="${2#v}" i x y
  a="${a%%+*}" b="${b%%+*}"
  local ac="${a%%-*}" bc="${b%%-*}" ap="" bp=""
  [[ "$a" != *-* ]] || ap="${a#*-}"
  [[ "$b" != *-* ]] || bp="${b#*-}"
  local -a an bn
  IFS=. read -r -a an <<<"$ac"
  IFS=. read -r -a bn <<<"$bc"
  for i in 0 1 2; do
    [ "${an[i]}" -eq "${bn[i]}" ] || { [ "${an[i]}" -lt "${bn[i]}" ]; return; }
  done
  if [ -z "$ap" ] || [ -z "$bp" ]; then
    [ -n "$ap" ] && [ -z "$bp" ]
    return
  fi
  local -a ai bi
  IFS=. read -r -a ai <<<"$ap"
  IFS=. read -r -a bi <<<"$bp"
  for ((i = 0; i < ${#ai[@]} && i < ${#bi[@]}; i++)); do
    x="${ai[i]}" y="${bi[i]}"
    [ "$x" != "$y" ] || continue
    if [[ "$x" =~ ^[0-9]+$ ]] && [[ "$y" =~ ^[0-9]+$ ]]; then
      [ "$x" -lt "$y" ]
    elif [[ "$x" =~ ^[0-9]+$ ]]; then
      true
    elif [[ "$y" =~ ^[0-9]+$ ]]; then
      false
    else
      [[ "$x" < "$y" ]]
    fi
    return
  done
  [ "${#ai[@]}" -lt "${#bi[@]}" ]
}

# ascending V...: each V is valid SemVer and sorts before the next.
ascending() {
  local v prev=""
  for v; do
    semver_valid "$v" || fail "$v is not valid SemVer"
    if [ -n "$prev" ] && ! semver_lt "$prev" "$v"; then fail "$prev does not sort before $v"; fi
    if [ -n "$prev" ] && semver_lt "$v" "$prev"; then fail "$v sorts before $prev too"; fi
    prev="$v"
  done
}
# The comparison itself, on SemVer 2.0.0's own example.
ascending v1.0.0-alpha v1.0.0-alpha.1 v1.0.0-alpha.beta v1.0.0-beta v1.0.0-beta.2 v1.0.0-beta.11 v1.0.0-rc.1 v1.0.0 v1.0.1 v1.1.0 v2.0.0

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
first_dev="$want"

g tag v0.9.0-rc.1
got="$(version)"
[ "$got" = v0.9.0-rc.1 ] || fail "tagged rc: $got"
pass "a tagged pre-release is its tag ($got)"

commit 1795778283 "after rc.1" # 12 hours later
got="$(version)"
want="v0.9.0-rc.1.dev.20261127111803-$(sha12)"
[ "$got" = "$want" ] || fail "after v0.9.0-rc.1: $got, want $want"
[ ! -s "$tmp/err" ] || fail "after v0.9.0-rc.1: unexpected stderr: $(cat "$tmp/err")"
ascending "$first_dev" v0.9.0-rc.1 "$got" "$got-dirty" v0.9.0-rc.2 v0.9.0
pass "after v0.9.0-rc.1: $got, after the tag and before v0.9.0-rc.2 and v0.9.0"

g tag v0.9.0-rc.2
got="$(version)"
[ "$got" = v0.9.0-rc.2 ] || fail "tagged rc: $got"
g tag -a -m "release" v0.9.0
got="$(version)"
case "$got" in v0.9.0 | v0.9.0-rc.2) ;; *) fail "tagged: $got, want one of its tags" ;; esac
g tag -d v0.9.0-rc.2 >/dev/null
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

g tag 'v0.11.0-beta.2+build.7'
commit 1795994283 "after a later beta" # a day later
got="$(version)"
want="v0.11.0-beta.2.dev.20261129231803-$(sha12)"
[ "$got" = "$want" ] || fail "after v0.11.0-beta.2+build.7: $got, want $want"
grep -q 'packaging/VERSION says 0.10.0: bump it' "$tmp/err" || fail "no warning to bump packaging/VERSION: $(cat "$tmp/err")"
ascending v0.11.0-beta.2 "$got" v0.11.0-beta.3 v0.11.0
pass "after a later version's pre-release v0.11.0-beta.2+build.7: $got (build metadata dropped), with a warning"

got="$(version VERSION=v1.2.3)"
[ "$got" = v1.2.3 ] || fail "VERSION=v1.2.3 gave $got"
pass "VERSION= overrides"

printf 'v1.0\n' >"$repo/packaging/VERSION"
if version >/dev/null; then fail "a malformed packaging/VERSION was accepted"; fi
grep -q "packaging/VERSION says 'v1.0'" "$tmp/err" || fail "error does not name the file: $(cat "$tmp/err")"
pass "malformed packaging/VERSION: $(cat "$tmp/err")"

echo "test-stamp: $n passed, 0 failed"
