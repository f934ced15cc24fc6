package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := parseConfig(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	brisbane, _ := time.LoadLocation("Australia/Brisbane")
	want := config{
		Host: "0.0.0.0", Port: 8080,
		Timeout: 90 * time.Second, InitTimeout: 10 * time.Second, SessionIdle: 300 * time.Second,
		SessionMaxTurns: 50, SessionMaxAge: 1800 * time.Second, MaxSessions: 8, SessionKey: acp.KeyPerSession,
		CancelGrace: 2 * time.Second, KidMode: true, MaxSentences: 6, TZ: brisbane,
		ConvoLogDir: "/root/zeroclaw-bridge/logs", LogLevel: hclog.Info, LogFormat: "text",
	}
	if d := cmp.Diff(c, want, cmp.AllowUnexported(config{}), cmpopts.IgnoreFields(config{}, "effective"), cmpopts.EquateEmpty(),
		cmp.Comparer(func(a, b *time.Location) bool { return a.String() == b.String() })); d != "" {
		t.Errorf("defaults (-got +want):\n%s", d)
	}
}

func TestParseConfigValues(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   func(string) string
		check func(t *testing.T, c config)
	}{
		{"python names keep their meaning", nil,
			env("PORT", "9000", "ZEROCLAW_BIN", "/opt/zc", "ZEROCLAW_TIMEOUT", "2.5", "ZEROCLAW_SESSION_IDLE", "60",
				"ZEROCLAW_SESSION_MAX_TURNS", "3", "ZEROCLAW_SESSION_MAX_AGE_SEC", "120", "ZEROCLAW_INIT_TIMEOUT", "4"),
			func(t *testing.T, c config) {
				if c.Port != 9000 || c.ZeroclawBin != "/opt/zc" || c.Timeout != 2500*time.Millisecond || c.SessionIdle != time.Minute ||
					c.SessionMaxTurns != 3 || c.SessionMaxAge != 2*time.Minute || c.InitTimeout != 4*time.Second {
					t.Errorf("%+v", c)
				}
			}},
		{"flag beats env", []string{"-port", "7000", "-zeroclaw-session-key", "shared"}, env("PORT", "9000", "ZEROCLAW_SESSION_KEY", "session_id"),
			func(t *testing.T, c config) {
				if c.Port != 7000 || c.SessionKey != acp.KeyShared {
					t.Errorf("port %d key %s", c.Port, c.SessionKey)
				}
			}},
		{"empty env is unset", nil, env("PORT", "", "LOG_LEVEL", ""),
			func(t *testing.T, c config) {
				if c.Port != 8080 || c.LogLevel != hclog.Info {
					t.Errorf("port %d level %v", c.Port, c.LogLevel)
				}
			}},
		{"shell words and lists", nil, env("ZEROCLAW_ARGS", `--max-sessions 4 --session-timeout "60"`, "ZEROCLAW_PERMISSION_DENY", " shell, file_write ,,"),
			func(t *testing.T, c config) {
				if d := cmp.Diff(c.ZeroclawArgs, []string{"--max-sessions", "4", "--session-timeout", "60"}); d != "" {
					t.Error(d)
				}
				if d := cmp.Diff(c.PermDeny, []string{"shell", "file_write"}); d != "" {
					t.Error(d)
				}
			}},
		{"kid mode truthy set", nil, env("DOTTY_KID_MODE", "YES"), func(t *testing.T, c config) {
			if !c.KidMode {
				t.Error("YES should be on")
			}
		}},
		{"kid mode anything else is off", nil, env("DOTTY_KID_MODE", "on"), func(t *testing.T, c config) {
			if c.KidMode {
				t.Error(`"on" is not truthy for DOTTY_KID_MODE in bridge.py`)
			}
		}},
		{"json logs at debug", nil, env("LOG_FORMAT", "json", "LOG_LEVEL", "DEBUG"), func(t *testing.T, c config) {
			if c.LogFormat != "json" || c.LogLevel != hclog.Debug {
				t.Errorf("%s %v", c.LogFormat, c.LogLevel)
			}
		}},
		{"port 0 allowed", nil, env("PORT", "0"), func(t *testing.T, c config) {
			if c.Port != 0 {
				t.Error(c.Port)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestParseConfigErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  func(string) string
		want []string
	}{
		{"bad timeout", nil, env("ZEROCLAW_TIMEOUT", "abc"), []string{`invalid ZEROCLAW_TIMEOUT "abc": want a positive number of seconds`}},
		{"zero timeout", nil, env("ZEROCLAW_INIT_TIMEOUT", "0"), []string{`invalid ZEROCLAW_INIT_TIMEOUT "0"`}},
		{"port range", nil, env("PORT", "70000"), []string{`invalid PORT "70000": want an integer from 0 to 65535`}},
		{"turns", nil, env("ZEROCLAW_SESSION_MAX_TURNS", "0"), []string{`invalid ZEROCLAW_SESSION_MAX_TURNS "0"`}},
		{"sessions", nil, env("ZEROCLAW_MAX_SESSIONS", "-1"), []string{`invalid ZEROCLAW_MAX_SESSIONS "-1"`}},
		{"key mode", nil, env("ZEROCLAW_SESSION_KEY", "device"), []string{`invalid ZEROCLAW_SESSION_KEY "device": want "session_id" or "shared"`}},
		{"relative cwd", nil, env("ZEROCLAW_SESSION_CWD", "work"), []string{`invalid ZEROCLAW_SESSION_CWD "work": want an absolute path`}},
		{"unbalanced quotes", nil, env("ZEROCLAW_ARGS", `--x "y`), []string{`invalid ZEROCLAW_ARGS`}},
		{"time zone", nil, env("TZ", "Mars/Olympus"), []string{`invalid TZ "Mars/Olympus"`}},
		{"log level", nil, env("LOG_LEVEL", "loud"), []string{`invalid LOG_LEVEL "loud"`}},
		{"log format", nil, env("LOG_FORMAT", "xml"), []string{`invalid LOG_FORMAT "xml"`}},
		{"flag named", []string{"-zeroclaw-timeout", "x"}, env(), []string{`invalid -zeroclaw-timeout "x"`}},
		{"all reported", nil, env("PORT", "x", "MAX_SENTENCES", "0"), []string{`invalid PORT "x"`, `invalid MAX_SENTENCES "0"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig(tt.args, tt.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := exitCode([]string{"-h"}, env(), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, s := range settings {
		if !strings.Contains(out.String(), "-"+s.flagName()+" value") || !strings.Contains(out.String(), "env "+s.env+",") {
			t.Errorf("help lacks %s / -%s", s.env, s.flagName())
		}
	}
	if !strings.Contains(out.String(), "demo-agent") {
		t.Error("help lacks the demo-agent subcommand")
	}
}

func TestExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := exitCode(nil, env("ZEROCLAW_TIMEOUT", "soon"), &out, &errOut); code != 2 {
		t.Errorf("invalid env exit %d", code)
	}
	if lines := strings.Split(strings.TrimSpace(errOut.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "ZEROCLAW_TIMEOUT") {
		t.Errorf("stderr %q: want one line naming the variable", errOut.String())
	}
	errOut.Reset()
	if code := exitCode([]string{"-no-such-flag"}, env(), &out, &errOut); code != 2 {
		t.Errorf("bad flag exit %d", code)
	}
	out.Reset()
	if code := exitCode([]string{"version"}, env(), &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "zeroclaw-bridge ") {
		t.Errorf("version: %d %q", code, out.String())
	}
}

func TestAgentSelection(t *testing.T) {
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	self := func() (string, error) { return "/usr/local/bin/zeroclaw-bridge", nil }
	tests := []struct {
		name     string
		c        config
		lk       lookups
		wantCmd  string
		wantArgs []string
		warn     bool
	}{
		{"ZEROCLAW_BIN wins even when missing", config{ZeroclawBin: "/nonexistent/zeroclaw", ZeroclawArgs: []string{"--max-sessions", "4"}},
			lookups{notFound, self}, "/nonexistent/zeroclaw", []string{"acp", "--max-sessions", "4"}, false},
		{"zeroclaw on PATH", config{}, lookups{func(string) (string, error) { return "/usr/bin/zeroclaw", nil }, self},
			"/usr/bin/zeroclaw", []string{"acp"}, false},
		{"demo agent fallback", config{}, lookups{notFound, self}, "/usr/local/bin/zeroclaw-bridge", []string{"demo-agent"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &logs})
			cmd, args, err := agentCommand(tt.c, tt.lk, log)
			if err != nil || cmd != tt.wantCmd || !cmp.Equal(args, tt.wantArgs) {
				t.Errorf("got %q %q %v", cmd, args, err)
			}
			if warned := strings.Count(logs.String(), "[WARN]"); warned != map[bool]int{true: 1, false: 0}[tt.warn] {
				t.Errorf("%d WARN lines: %s", warned, logs.String())
			}
		})
	}
	_, _, err := agentCommand(config{}, lookups{notFound, func() (string, error) { return "", errors.New("no /proc") }}, hclog.NewNullLogger())
	if err == nil {
		t.Error("missing own executable not reported")
	}
}
