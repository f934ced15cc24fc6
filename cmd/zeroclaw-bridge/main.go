// Command zeroclaw-bridge is the bridge of the dotty-stackchan desk robot: a
// single-binary, drop-in replacement for bridge.py. It serves
// xiaozhi-esp32-server over HTTP and drives one supervised `zeroclaw acp`
// child over the Agent Client Protocol.
//
// Usage:
//
//	zeroclaw-bridge [flags]            serve (configuration from flags and env)
//	zeroclaw-bridge demo-agent         run the built-in demo ACP agent on stdio
//	zeroclaw-bridge acp                the same, named like `zeroclaw acp`
//	zeroclaw-bridge mcp                the robot's tools as an MCP server on stdio, relayed to the running bridge
//	zeroclaw-bridge version            print the version, commit, build date, Go version and platform
//
// Every setting is an environment variable with a flag of the same meaning;
// `zeroclaw-bridge -h` lists them with their defaults, and
// docs/configuration.md describes each. Exit status: 0 after a clean
// shutdown (SIGINT or SIGTERM), 2 for invalid configuration or usage, 75
// after a restart asked from the dashboard (the same graceful shutdown; the
// shipped systemd unit and the container's restart policy start the bridge
// again), 1 for any other failure.
//
// The program itself is package cmd/internal/bridgeapp; this is its main.
package main

import (
	"os"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/bridgeapp"
)

// Build stamps, set by the release build (scripts/build-binary.sh, the
// Dockerfile) with
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=<sha> -X main.date=<RFC 3339>"
//
// date is the commit's date, not the build's, so two builds of one commit are
// byte-identical. Unstamped (go run, go build), version falls back to the
// module version or "dev", and commit and date to the VCS information the go
// command recorded, if any.
var (
	version = ""
	commit  = ""
	date    = ""
)

func main() {
	os.Exit(bridgeapp.Main(os.Args[1:], bridgeapp.Stamps{Version: version, Commit: commit, Date: date}))
}
