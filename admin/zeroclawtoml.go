package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// addZeroClawMCP returns doc with m's server table, its bundle table and
// the agent's grant of the bundle (mcp_bundles, acp_enable_mcp = true),
// each added or brought up to date in place; every other line, comments
// included, is kept. It returns the agent granted ("" for a config with no
// agents). The result is parsed back and checked: an edit that would not
// say exactly this, or a doc that is not valid TOML, is an error.
func addZeroClawMCP(doc string, m ZeroClawMCP) (string, string, error) {
	var before map[string]any
	if _, err := toml.Decode(doc, &before); err != nil {
		return "", "", fmt.Errorf("not valid TOML: %w", err)
	}
	agent, err := grantedAgent(before, m.Agent)
	if err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimSuffix(doc, "\n"), "\n")
	lines = putTable(lines, func(header string, body []string) bool {
		return header == "[[mcp.servers]]" && slices.ContainsFunc(body, isNameLine(m.Name))
	}, m.serverTable())
	lines = putTable(lines, func(header string, _ []string) bool {
		return header == "[mcp_bundles."+m.Name+"]"
	}, m.bundleTable())
	if agent != "" {
		if lines, err = grantBundle(lines, before, agent, m.Name); err != nil {
			return "", "", err
		}
	}
	out := strings.Join(lines, "\n") + "\n"
	if err := m.check(out, agent); err != nil {
		return "", "", fmt.Errorf("cannot be edited safely (%w); add this by hand:\n%s", err, m.TOML())
	}
	return out, agent, nil
}

// grantedAgent is the agent to grant the bundle: alias, else ZeroClaw's
// acp.default_agent, else its only agent; "" when it has no agents.
func grantedAgent(cfg map[string]any, alias string) (string, error) {
	agents, _ := cfg["agents"].(map[string]any)
	if alias == "" {
		acp, _ := cfg["acp"].(map[string]any)
		alias, _ = acp["default_agent"].(string)
	}
	switch {
	case alias != "":
		if _, ok := agents[alias]; !ok {
			return "", fmt.Errorf("no agent %q in it", alias)
		}
		return alias, nil
	case len(agents) == 1:
		for a := range agents {
			return a, nil
		}
	case len(agents) > 1:
		return "", errors.New("several agents and no acp.default_agent: set ZEROCLAW_AGENT_ALIAS to the one the bridge uses")
	}
	return "", nil
}

var (
	headerLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*(\[\[?\s*[A-Za-z0-9_."'-]+(?:\s*\.\s*[A-Za-z0-9_."'-]+)*\s*\]\]?)\s*(?:#.*)?$`)
	})
	headerNoise = strings.NewReplacer(" ", "", "\t", "", `"`, "", "'", "")
)

// header returns a table header line without spaces and quotes
// ("[mcp_bundles.dotty-robot]"), or "" for another line.
func header(line string) string {
	if m := headerLine().FindStringSubmatch(line); m != nil {
		return headerNoise.Replace(m[1])
	}
	return ""
}

// isNameLine matches a table's `name = "<name>"` line.
func isNameLine(name string) func(string) bool {
	re := regexp.MustCompile(`^\s*name\s*=\s*` + regexp.QuoteMeta(tomlString(name)) + `\s*(?:#.*)?$`)
	return re.MatchString
}

// tableAt returns the table whose header is lines[start]: its end, past
// its last line that is neither blank nor a comment (those belong to the
// next table).
func tableAt(lines []string, start int) (end int) {
	next := len(lines)
	for j := start + 1; j < len(lines); j++ {
		if header(lines[j]) != "" {
			next = j
			break
		}
	}
	end = next
	for end > start+1 {
		if l := strings.TrimSpace(lines[end-1]); l != "" && !strings.HasPrefix(l, "#") {
			break
		}
		end--
	}
	return end
}

// putTable replaces the first table match accepts with table, or appends
// table after a blank line.
func putTable(lines []string, match func(header string, body []string) bool, table string) []string {
	add := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	for i, l := range lines {
		if h := header(l); h != "" {
			if end := tableAt(lines, i); match(h, lines[i+1:end]) {
				return slices.Concat(lines[:i], add, lines[end:])
			}
		}
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > 0 {
		lines = append(lines, "")
	}
	return append(append(lines, "# The desk robot's tools (zeroclaw-bridge mcp), added by the bridge."), add...)
}

// grantBundle grants bundle to agent in its [agents.<agent>] table: adds
// bundle to its mcp_bundles and sets acp_enable_mcp = true, leaving
// either line alone when it already says so.
func grantBundle(lines []string, cfg map[string]any, agent, bundle string) ([]string, error) {
	start := slices.IndexFunc(lines, func(l string) bool { return header(l) == "[agents."+agent+"]" })
	if start < 0 {
		return nil, fmt.Errorf("agent %q has no [agents.%s] table to edit", agent, agent)
	}
	end := tableAt(lines, start)
	a, _ := cfg["agents"].(map[string]any)[agent].(map[string]any)
	if on, _ := a["acp_enable_mcp"].(bool); !on {
		line := "acp_enable_mcp = true"
		if i := keyLine(lines, start, end, "acp_enable_mcp"); i >= 0 {
			lines = slices.Concat(lines[:i], []string{line}, lines[i+1:])
		} else {
			lines = slices.Insert(lines, start+1, line)
			end++
		}
	}
	var bundles []string
	have, _ := a["mcp_bundles"].([]any)
	for _, b := range have {
		s, _ := b.(string)
		bundles = append(bundles, s)
	}
	if slices.Contains(bundles, bundle) {
		return lines, nil
	}
	quoted := make([]string, 0, len(bundles)+1)
	for _, b := range append(bundles, bundle) {
		quoted = append(quoted, tomlString(b))
	}
	line := "mcp_bundles = [" + strings.Join(quoted, ", ") + "]"
	i := keyLine(lines, start, end, "mcp_bundles")
	if i < 0 {
		return slices.Insert(lines, start+1, line), nil
	}
	last := i
	for depth := bracketDepth(lines[i]); depth > 0 && last+1 < end; depth += bracketDepth(lines[last]) {
		last++
	}
	return slices.Concat(lines[:i], []string{line}, lines[last+1:]), nil
}

// keyLine returns the index of key's line in lines[start+1:end], or -1.
func keyLine(lines []string, start, end int, key string) int {
	re := regexp.MustCompile(`^\s*` + regexp.QuoteMeta(key) + `\s*=`)
	for i := start + 1; i < end; i++ {
		if re.MatchString(lines[i]) {
			return i
		}
	}
	return -1
}

// bracketDepth is the opened minus the closed square brackets of line,
// outside strings and comments.
func bracketDepth(line string) int {
	depth := 0
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#':
			return depth
		case r == '[':
			depth++
		case r == ']':
			depth--
		}
	}
	return depth
}

// check parses doc and reports what it does not say of m: exactly one
// server named m.Name, as m's table writes it; its bundle; the agent's
// grant.
func (m ZeroClawMCP) check(doc, agent string) error {
	var got struct {
		MCP struct {
			Servers []struct {
				Name, Transport, Command string
				Args                     []string
				Env                      map[string]string
			} `toml:"servers"`
		} `toml:"mcp"`
		Bundles map[string]struct {
			Servers []string `toml:"servers"`
		} `toml:"mcp_bundles"`
		Agents map[string]struct {
			Bundles []string `toml:"mcp_bundles"`
			MCP     bool     `toml:"acp_enable_mcp"`
		} `toml:"agents"`
	}
	if _, err := toml.Decode(doc, &got); err != nil {
		return fmt.Errorf("the edit is not valid TOML: %w", err)
	}
	n := 0
	for _, s := range got.MCP.Servers {
		if s.Name != m.Name {
			continue
		}
		n++
		if s.Transport != "stdio" || s.Command != m.Command || !slices.Equal(s.Args, []string{"mcp"}) ||
			len(s.Env) != 1 || s.Env["DOTTY_MCP_TOKEN_FILE"] != m.TokenFile {
			return fmt.Errorf("server %q is not as written", m.Name)
		}
	}
	if n != 1 {
		return fmt.Errorf("%d servers named %q", n, m.Name)
	}
	if !slices.Equal(got.Bundles[m.Name].Servers, []string{m.Name}) {
		return fmt.Errorf("bundle %q is not as written", m.Name)
	}
	if a, ok := got.Agents[agent]; agent != "" && (!ok || !a.MCP || !slices.Contains(a.Bundles, m.Name)) {
		return fmt.Errorf("agent %q is not granted bundle %q", agent, m.Name)
	}
	return nil
}

// tomlString is s as a TOML basic string: JSON's escapes are TOML's.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// bareKey matches a TOML key that needs no quotes.
var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })
