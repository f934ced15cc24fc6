package bridgeapp

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Build stamps: the release build's -ldflags stamps of package main
// (cmd/zeroclaw-bridge, where they are documented), recorded here by Main.
// Unstamped, version falls back to the module version or "dev", and commit
// and date to the VCS information the go command recorded, if any.
var (
	version = ""
	commit  = ""
	date    = ""
)

// buildVersion is the -ldflags version, else the module version from the
// build info, else "dev".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// buildInfo is what `zeroclaw-bridge version` prints.
type buildInfo struct {
	Version, Commit, Date, Go, Platform string
}

// currentBuild gathers the stamps, falling back to the go command's VCS
// settings ("unknown" when there are none).
func currentBuild() buildInfo {
	b := buildInfo{Version: buildVersion(), Commit: commit, Date: date, Go: runtime.Version(), Platform: platform()}
	var vcsRev, vcsTime string
	var modified bool
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRev = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if b.Commit == "" {
		b.Commit = vcsRev
		if b.Commit != "" && modified {
			b.Commit += " (modified)"
		}
	}
	if b.Date == "" {
		b.Date = vcsTime
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

// platform is GOOS/GOARCH, with the ARM level for 32-bit ARM (linux/arm/v7).
func platform() string {
	p := runtime.GOOS + "/" + runtime.GOARCH
	if runtime.GOARCH != "arm" {
		return p
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOARM" && s.Value != "" {
				return p + "/v" + strings.TrimSuffix(strings.TrimSuffix(s.Value, ",softfloat"), ",hardfloat")
			}
		}
	}
	return p
}

// versionText is the output of `zeroclaw-bridge version` and -version: the
// first line is "zeroclaw-bridge <version>" (what scripts read), then one
// "key: value" line each for the commit, the build date (the commit's), the
// Go version and the platform.
func versionText() string {
	b := currentBuild()
	return fmt.Sprintf("zeroclaw-bridge %s\ncommit:   %s\ndate:     %s\ngo:       %s\nplatform: %s\n",
		b.Version, b.Commit, b.Date, b.Go, b.Platform)
}

func printVersion(w io.Writer) error {
	if _, err := io.WriteString(w, versionText()); err != nil {
		return fmt.Errorf("print version: %w", err)
	}
	return nil
}
