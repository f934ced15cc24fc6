#!/usr/bin/env bash
# Builds one static, stripped, stamped zeroclaw-bridge binary; the release
# script and the Dockerfile both build through it, so their binaries of one
# commit and platform are the same bytes.
#
#   scripts/build-binary.sh OUT GOOS GOARCH [GOARM]
#
# Stamps come from the environment (VERSION, COMMIT, DATE, see
# scripts/stamp.sh); unset ones are left out, and the binary then says "dev"
# and "unknown" like a `go build` one.
set -euo pipefail
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: $0 OUT GOOS GOARCH [GOARM]" >&2
  exit 2
fi
out="$1" goos="$2" goarch="$3" goarm="${4:-}"
cd "$(dirname "$0")/.."

ldflags="-s -w -buildid="
[ -z "${VERSION:-}" ] || ldflags="$ldflags -X main.version=$VERSION"
[ -z "${COMMIT:-}" ] || ldflags="$ldflags -X main.commit=$COMMIT"
[ -z "${DATE:-}" ] || ldflags="$ldflags -X main.date=$DATE"

# Everything that changes the output is fixed here rather than taken from
# the caller's environment: cgo off (static), the baseline instruction sets,
# no VCS stamp (the -X stamps say the same and a Docker context has no .git),
# the local toolchain and read-only modules.
env -u GOFLAGS -u GOEXPERIMENT -u GOAMD64 -u GOARM64 -u GOARM \
  CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" ${goarm:+GOARM="$goarm"} \
  GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
  go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out" ./cmd/zeroclaw-bridge
