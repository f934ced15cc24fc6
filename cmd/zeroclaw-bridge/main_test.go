package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReleaseStampsReachVersion: the release build's -X stamps name this
// package's variables (scripts/build-binary.sh), and main hands them to the
// program: the built binary's `version` prints them.
func TestReleaseStampsReachVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "zeroclaw-bridge")
	ldflags := "-X main.version=v1.2.3-stamp -X main.commit=0123456789abcdef -X main.date=2025-11-25T14:03:00Z"
	if out, err := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	want := "zeroclaw-bridge v1.2.3-stamp\ncommit:   0123456789abcdef\ndate:     2025-11-25T14:03:00Z\n"
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("version printed\n%s\nwant it to start with\n%s", out, want)
	}
}
