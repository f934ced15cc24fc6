package bridgeapp

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documentedOnly are variables docs/configuration.md names although the
// binary does not read them: bridge.py's, explained there as not needed.
var documentedOnly = []string{"BRIDGE_INTERNAL_URL"}

// TestConfigurationDocMatchesTheBinary: every variable the binary reads is
// a row of docs/configuration.md, and every variable a row names is read
// (or is listed above as bridge.py's and not needed).
func TestConfigurationDocMatchesTheBinary(t *testing.T) {
	b, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	documented := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0] // the variable column
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			documented[m[1]] = true
		}
	}
	read := map[string]bool{}
	for _, s := range settings {
		read[s.env] = true
		if !documented[s.env] {
			t.Errorf("%s is read by the binary but has no row in docs/configuration.md", s.env)
		}
	}
	for _, env := range mcpEnv { // `zeroclaw-bridge mcp`'s
		read[env] = true
		if !documented[env] {
			t.Errorf("%s is read by `zeroclaw-bridge mcp` but has no row in docs/configuration.md", env)
		}
	}
	for env := range documented {
		if !read[env] && !slices.Contains(documentedOnly, env) {
			t.Errorf("docs/configuration.md has a row for %s, which the binary does not read", env)
		}
	}
}

// TestConfigurationDocShowsTheDefaults: the Default column of
// docs/configuration.md is each setting's default as -h shows it (a row of
// several variables lists their defaults in the same order). A setting
// unset by default may show what applies instead (the key it falls back
// on).
func TestConfigurationDocShowsTheDefaults(t *testing.T) {
	b, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	name, value := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`"), regexp.MustCompile("`([^`]*)`")
	documented := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cols := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cols) < 4 {
			continue
		}
		envs, defs := name.FindAllStringSubmatch(cols[0], -1), value.FindAllStringSubmatch(cols[2], -1)
		for i, m := range envs {
			switch {
			case len(defs) == len(envs):
				documented[m[1]] = defs[i][1]
			case strings.TrimSpace(cols[2]) == "unset":
				documented[m[1]] = ""
			default:
				documented[m[1]] = "?" + cols[2]
			}
		}
	}
	for _, s := range settings {
		if got, ok := documented[s.env]; ok && s.def != "" && got != s.def {
			t.Errorf("docs/configuration.md shows %s's default as %q, -h as %q", s.env, got, s.def)
		}
	}
}
