# zeroclaw-bridge tasks. `just` is optional: install with `npm i -g rust-just`.

# Run the bridge (the demo agent answers when ZeroClaw is not installed).
run *ARGS:
    go run ./cmd/zeroclaw-bridge {{ARGS}}

# Vet and run every test with the race detector.
test:
    go vet ./... && go test -race -timeout=300s ./...

# Run the benchmarks.
bench:
    go test -run='^$' -bench=. -benchmem ./...

# Formatting and vet checks.
lint:
    test -z "$(gofmt -l .)" || (gofmt -l . && exit 1)
    go vet ./...

# Build the binary into ./bin.
build:
    go build -o bin/zeroclaw-bridge ./cmd/zeroclaw-bridge
