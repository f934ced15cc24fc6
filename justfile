# zeroclaw-bridge recipes. `just` is optional (npm i -g rust-just); each
# recipe is a plain command you can also type yourself.

# Run the bridge; with no ZeroClaw installed the built-in demo agent answers.
run *ARGS:
    go run ./cmd/zeroclaw-bridge {{ARGS}}

# Vet, then run every test with the race detector.
test:
    go vet ./... && go test -race -timeout=300s ./...

# Measure the real binary with the demo agent and print one table (docs/performance.md).
bench:
    go run ./cmd/bridgebench

# Five minutes of load with injected faults, then the invariants (CI runs -short).
soak *ARGS:
    go run ./cmd/soak {{ARGS}}

# The in-process Go benchmarks.
bench-go:
    go test -run='^$' -bench=. -benchmem ./...

# Perception ingest load (events/s, latency, delivery per consumer).
load *ARGS:
    go run ./cmd/perception-load {{ARGS}}

# Fail on unformatted files, then vet.
lint:
    @test -z "$(gofmt -l .)" || { echo "gofmt would reformat:"; gofmt -l .; exit 1; }
    go vet ./...

# Build the binary into ./bin.
build:
    go build -o bin/zeroclaw-bridge ./cmd/zeroclaw-bridge

# Everything CI runs.
ci:
    ./.ci/run

# Reproducible release tarballs (linux amd64, arm64, armv7) and SHA256SUMS in dist/; version: the tag on HEAD, else packaging/VERSION-dev.<time>-<sha>; VERSION=v1.2.3 overrides.
release *ARGS:
    scripts/release.sh {{ARGS}}

# The container image (docker, or CONTAINER=podman), stamped like a release; podman builds in Docker format, since OCI images drop the HEALTHCHECK.
image TAG="zeroclaw-bridge:local":
    eval "$(scripts/stamp.sh)" && c="${CONTAINER:-docker}" && case "${c##*/}" in podman|buildah) fmt="--format docker" ;; *) fmt="" ;; esac && "$c" build $fmt --build-arg VERSION="$VERSION" --build-arg COMMIT="$COMMIT" --build-arg DATE="$DATE" -t {{TAG}} .

# The release, container and installer checks CI runs (or some: just ci-release smoke install).
ci-release *STEPS:
    scripts/ci-release.sh {{STEPS}}
