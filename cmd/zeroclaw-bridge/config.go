package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mattn/go-shellwords"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
)

// config is the bridge's whole configuration, parsed from flags and the
// environment. Only package main parses; components get typed Configs.
type config struct {
	Host string
	Port int

	ZeroclawBin     string // empty: look for zeroclaw, else the demo agent
	ZeroclawArgs    []string
	Timeout         time.Duration
	InitTimeout     time.Duration
	SessionIdle     time.Duration
	SessionMaxTurns int
	SessionMaxAge   time.Duration
	MaxSessions     int
	SessionKey      acp.SessionKeyMode
	AgentAlias      string
	SessionCwd      string
	CancelGrace     time.Duration
	PermAllow       []string
	PermDeny        []string
	KidMode         bool

	MaxSentences int
	TZ           *time.Location
	ConvoLogDir  string

	LogLevel  hclog.Level
	LogFormat string

	// effective holds each variable's raw value as used (secrets redacted),
	// for the one start-up log line.
	effective []any
}

// setting is one configuration knob: a flag, the environment variable of
// the same meaning, its default and its parser.
type setting struct {
	env    string
	def    string
	help   string
	secret bool
	parse  func(c *config, v string) error
}

// flagName is the kebab-case flag of an environment variable.
func (s setting) flagName() string { return strings.ReplaceAll(strings.ToLower(s.env), "_", "-") }

var settings = []setting{
	{env: "BRIDGE_HOST", def: "0.0.0.0", help: "listen host",
		parse: func(c *config, v string) error { c.Host = v; return nil }},
	{env: "PORT", def: "8080", help: "listen port (0 picks a free port)",
		parse: func(c *config, v string) error { return parseInt(&c.Port, v, 0, 65535) }},
	{env: "ZEROCLAW_BIN", def: "", help: "agent binary, run as `<bin> acp`; unset: zeroclaw on PATH, then /root/.cargo/bin/zeroclaw, else the built-in demo agent",
		parse: func(c *config, v string) error { c.ZeroclawBin = v; return nil }},
	{env: "ZEROCLAW_ARGS", def: "", help: "extra agent arguments after `acp`, split like a shell would",
		parse: func(c *config, v string) error {
			args, err := shellwords.Parse(v)
			if err != nil {
				return errors.New("want shell words")
			}
			c.ZeroclawArgs = args
			return nil
		}},
	{env: "ZEROCLAW_TIMEOUT", def: "90", help: "outer timeout of one voice turn in seconds, lease wait included",
		parse: func(c *config, v string) error { return parseSeconds(&c.Timeout, v) }},
	{env: "ZEROCLAW_INIT_TIMEOUT", def: "10", help: "seconds to wait for the agent's initialize and session/new answers",
		parse: func(c *config, v string) error { return parseSeconds(&c.InitTimeout, v) }},
	{env: "ZEROCLAW_SESSION_IDLE", def: "300", help: "rotate an agent session idle for longer than this many seconds",
		parse: func(c *config, v string) error { return parseSeconds(&c.SessionIdle, v) }},
	{env: "ZEROCLAW_SESSION_MAX_TURNS", def: "50", help: "rotate an agent session after this many turns",
		parse: func(c *config, v string) error { return parseInt(&c.SessionMaxTurns, v, 1, math.MaxInt32) }},
	{env: "ZEROCLAW_SESSION_MAX_AGE_SEC", def: "1800", help: "rotate an agent session older than this many seconds",
		parse: func(c *config, v string) error { return parseSeconds(&c.SessionMaxAge, v) }},
	{env: "ZEROCLAW_MAX_SESSIONS", def: "8", help: "most live agent sessions; idle ones are closed first",
		parse: func(c *config, v string) error { return parseInt(&c.MaxSessions, v, 1, 1000) }},
	{env: "ZEROCLAW_SESSION_KEY", def: "session_id", help: "session_id: one agent session per caller session; shared: one for everyone (bridge.py)",
		parse: func(c *config, v string) error {
			switch m := acp.SessionKeyMode(strings.ToLower(strings.TrimSpace(v))); m {
			case acp.KeyPerSession, acp.KeyShared:
				c.SessionKey = m
				return nil
			}
			return errors.New(`want "session_id" or "shared"`)
		}},
	{env: "ZEROCLAW_AGENT_ALIAS", def: "", help: "agentAlias sent on session/new to ZeroClaw 0.8+",
		parse: func(c *config, v string) error { c.AgentAlias = v; return nil }},
	{env: "ZEROCLAW_SESSION_CWD", def: "", help: "absolute working directory sent on session/new",
		parse: func(c *config, v string) error {
			if v != "" && !filepath.IsAbs(v) {
				return errors.New("want an absolute path")
			}
			c.SessionCwd = v
			return nil
		}},
	{env: "ZEROCLAW_CANCEL_GRACE", def: "2", help: "seconds a cancelled turn waits for the agent's cancelled result before the session is retired",
		parse: func(c *config, v string) error { return parseSeconds(&c.CancelGrace, v) }},
	{env: "ZEROCLAW_PERMISSION_ALLOW", def: "", help: "comma-separated tools the agent may use without a log line",
		parse: func(c *config, v string) error { c.PermAllow = splitList(v); return nil }},
	{env: "ZEROCLAW_PERMISSION_DENY", def: "", help: "comma-separated tools the agent is never allowed",
		parse: func(c *config, v string) error { c.PermDeny = splitList(v); return nil }},
	{env: "DOTTY_KID_MODE", def: "true", help: "kid mode (1/true/yes, any case, is on; anything else off); denies camera.take_photo",
		parse: func(c *config, v string) error {
			c.KidMode = slices.Contains([]string{"1", "true", "yes"}, strings.ToLower(strings.TrimSpace(v)))
			return nil
		}},
	{env: "MAX_SENTENCES", def: "6", help: "sentence cap of spoken replies",
		parse: func(c *config, v string) error { return parseInt(&c.MaxSentences, v, 1, 1000) }},
	{env: "TZ", def: "Australia/Brisbane", help: "time zone of dates in prompts and logs",
		parse: func(c *config, v string) error {
			loc, err := time.LoadLocation(v)
			if err != nil {
				return errors.New("want an IANA time zone name")
			}
			c.TZ = loc
			return nil
		}},
	{env: "CONVO_LOG_DIR", def: "/root/zeroclaw-bridge/logs", help: "directory of the conversation logs",
		parse: func(c *config, v string) error { c.ConvoLogDir = v; return nil }},
	{env: "LOG_LEVEL", def: "info", help: "trace, debug, info, warn or error",
		parse: func(c *config, v string) error {
			l := hclog.LevelFromString(v)
			if l == hclog.NoLevel || l == hclog.Off {
				return errors.New("want trace, debug, info, warn or error")
			}
			c.LogLevel = l
			return nil
		}},
	{env: "LOG_FORMAT", def: "text", help: "text or json",
		parse: func(c *config, v string) error {
			if v != "text" && v != "json" {
				return errors.New(`want "text" or "json"`)
			}
			c.LogFormat = v
			return nil
		}},
}

// errHelp is returned by parseConfig for -h and --help.
var errHelp = errors.New("help requested")

// parseConfig reads flags from args and the environment through getenv.
// Flags win over the environment, which wins over defaults; an empty
// variable counts as unset. Every invalid value is reported, each naming
// its variable.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("zeroclaw-bridge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := make(map[string]*string, len(settings))
	for _, s := range settings {
		vals[s.env] = fs.String(s.flagName(), "", s.help)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, errHelp
		}
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fromFlag := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { fromFlag[f.Name] = true })

	var c config
	var errs []error
	for _, s := range settings {
		v, src := s.def, s.env
		if e := getenv(s.env); e != "" {
			v = e
		}
		if fromFlag[s.flagName()] {
			v, src = *vals[s.env], "-"+s.flagName()
		}
		shown := v
		if s.secret && v != "" {
			shown = "<redacted>"
		}
		c.effective = append(c.effective, strings.ToLower(s.env), shown)
		if err := s.parse(&c, v); err != nil {
			errs = append(errs, fmt.Errorf("invalid %s %q: %w", src, shown, err))
		}
	}
	return c, errors.Join(errs...)
}

func parseSeconds(dst *time.Duration, v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 365*24*3600 {
		return errors.New("want a positive number of seconds")
	}
	*dst = time.Duration(f * float64(time.Second))
	return nil
}

func parseInt(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("want an integer from %d to %d", lo, hi)
	}
	*dst = n
	return nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// usage writes the help text: commands, then every flag with its variable and default.
func usage(w io.Writer) {
	fmt.Fprint(w, `zeroclaw-bridge: the brain-side bridge between xiaozhi-esp32-server and a ZeroClaw agent.

Usage:
  zeroclaw-bridge [flags]                       serve HTTP (default)
  zeroclaw-bridge demo-agent [-chunk-delay 40ms] run the built-in demo ACP agent on stdio
  zeroclaw-bridge version                       print the version

Every flag has an environment variable of the same meaning; a flag wins
over the environment, an empty variable counts as unset.

Flags:
`)
	for _, s := range settings {
		def := s.def
		if def == "" {
			def = "unset"
		}
		fmt.Fprintf(w, "  -%s value\n        %s (env %s, default %s)\n", s.flagName(), s.help, s.env, def)
	}
}
