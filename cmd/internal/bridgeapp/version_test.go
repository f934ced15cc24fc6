package bridgeapp

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// stamp sets the -ldflags variables for one test and restores them after.
func stamp(t *testing.T, v, c, d string) {
	t.Helper()
	oldV, oldC, oldD := version, commit, date
	version, commit, date = v, c, d
	t.Cleanup(func() { version, commit, date = oldV, oldC, oldD })
}

func TestVersionTextStamped(t *testing.T) {
	stamp(t, "v1.2.3", "0123456789abcdef0123456789abcdef01234567", "2025-11-25T14:03:00Z")
	var out bytes.Buffer
	if err := printVersion(&out); err != nil {
		t.Fatal(err)
	}
	want := "zeroclaw-bridge v1.2.3\n" +
		"commit:   0123456789abcdef0123456789abcdef01234567\n" +
		"date:     2025-11-25T14:03:00Z\n" +
		"go:       " + runtime.Version() + "\n" +
		"platform: " + platform() + "\n"
	if out.String() != want {
		t.Errorf("version output\n%s\nwant\n%s", out.String(), want)
	}
	if buildVersion() != "v1.2.3" {
		t.Errorf("buildVersion() = %q, want the stamp", buildVersion())
	}
}

// TestVersionTextUnstamped: a `go run` or `go test` build says "dev" (the
// test binary has no module version) and never leaves a field empty.
func TestVersionTextUnstamped(t *testing.T) {
	stamp(t, "", "", "")
	lines := strings.Split(strings.TrimSuffix(versionText(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d lines, want 5: %q", len(lines), lines)
	}
	if lines[0] != "zeroclaw-bridge dev" {
		t.Errorf("first line %q, want %q", lines[0], "zeroclaw-bridge dev")
	}
	for i, key := range []string{"commit:", "date:", "go:", "platform:"} {
		line := lines[i+1]
		if !strings.HasPrefix(line, key) || strings.TrimSpace(strings.TrimPrefix(line, key)) == "" {
			t.Errorf("line %q: want %s and a value", line, key)
		}
	}
}

func TestPlatform(t *testing.T) {
	p := platform()
	if !strings.HasPrefix(p, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("platform() = %q, want it to start with %s/%s", p, runtime.GOOS, runtime.GOARCH)
	}
	if runtime.GOARCH != "arm" && p != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("platform() = %q, want no ARM level on %s", p, runtime.GOARCH)
	}
}

// TestVersionSubcommandAndFlagAgree: `version` and -version print the same.
func TestVersionSubcommandAndFlagAgree(t *testing.T) {
	stamp(t, "v9.9.9", "abc", "2024-01-02T03:04:05Z")
	var sub, flag, errOut bytes.Buffer
	if err := Run(t.Context(), []string{"version"}, func(string) (string, bool) { return "", false }, &sub, &errOut); err != nil {
		t.Fatal(err)
	}
	if err := Run(t.Context(), []string{"-version"}, func(string) (string, bool) { return "", false }, &flag, &errOut); err != nil {
		t.Fatal(err)
	}
	if sub.String() != flag.String() || !strings.HasPrefix(sub.String(), "zeroclaw-bridge v9.9.9\ncommit:   abc\n") {
		t.Errorf("version %q, -version %q", sub.String(), flag.String())
	}
}
