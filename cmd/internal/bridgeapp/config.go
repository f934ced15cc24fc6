package bridgeapp

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mattn/go-shellwords"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/periphery"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/sidecar"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/social"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/vision"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
)

// config is the bridge's whole configuration, parsed from flags and the
// environment by parseConfig. Each setting lands in the Config of the
// component that owns it; serve only adds what is built at run time (the
// logger, metrics, the components each one depends on) and copies the few
// settings several components share (TZ, the device bound, the alias, the
// API key fallbacks).
type config struct {
	HTTP        bridge.Config
	Agent       agentChoice
	ACP         acp.Config
	ACPClient   acpclient.Config
	Permissions agentconn.Policy
	Pool        acp.PoolConfig
	Voice       voice.Config
	Modes       admin.ModesConfig
	ConvoLog    convolog.Config
	Periphery   periphery.Config
	Xiaozhi     xiaozhi.Config
	Memory      memstore.Config
	Tier1       tier1.Config
	Perception  perception.Config
	Vision      vision.Config
	UI          ui.Config
	Admin       admin.Config
	Sidecar     sidecar.Config
	Social      social.Config
	Steerable   steerable.Config
	Narrative   llm.NarrativeConfig
	MCP         mcpConfig
	Keys        apiKeys
	// Access is the one Host, Origin and credentials rule (the dashboard's
	// user and password, BRIDGE_PUBLIC_HOSTS), shared by every route.
	Access httpapi.AccessConfig

	// TZ is the zone of every component that formats local time.
	TZ *time.Location
	// ToolAllowList is the file behind /admin/safety's allow list.
	ToolAllowList string

	legacyGreetMin *time.Duration // FACE_GREET_COOLDOWN_SEC, used when FACE_GREET_MIN_INTERVAL_SEC is unset

	LogLevel  hclog.Level
	LogFormat string

	// showVersion is set by -version.
	showVersion bool
	// raw maps an environment name to the value it was parsed from
	// (redacted for secrets), origin to where that value came from: the
	// flag ("-port"), the variable ("PORT") or "default".
	raw    map[string]string
	origin map[string]string
	// notes are the parse's warnings, logged once the logger is up:
	// switches read against their word, defaults whose "~" has no home.
	notes []note
	// demo is where the demo mode keeps its files.
	demo demoState
}

// note is a warning about one setting.
type note struct{ env, text string }

// agentChoice is what selects the agent child: ZEROCLAW_BIN (empty: look
// for zeroclaw, else the demo agent) and ZEROCLAW_ARGS (after "acp").
type agentChoice struct {
	Bin  string
	Args []string
	// Protocol is AGENT_PROTOCOL: "acp" or "steerable".
	Protocol string
	// SteerableCmd is STEERABLE_CMD, split into words like a POSIX shell.
	SteerableCmd []string
}

// Agent protocols (AGENT_PROTOCOL).
const (
	protocolACP       = "acp"
	protocolSteerable = "steerable"
)

// apiKeys are the settings that fall back on one another, resolved in
// serve: a key left unset takes the next one's value.
type apiKeys struct {
	OpenRouter string // OPENROUTER_API_KEY: the last fallback of every cloud key
	Cloud      string // TIER1SLIM_CLOUD_API_KEY
	Vision     string // VISION_API_KEY
	Audio      string // AUDIO_CAPTION_API_KEY
	VLM        string // VLM_API_KEY
	VLMModel   string // VLM_MODEL, over VISION_MODEL
	VLMURL     string // VLM_API_URL, over VISION_API_URL
}

// setting is one row of the configuration table: an environment variable,
// the flag of the same meaning, its default, its help text and its parser.
// Parsers check syntax only; ranges are checked by the owning component's
// Validate for a row made by fieldSetting, by config.validate for the
// others.
type setting struct {
	env    string
	def    string
	help   string
	secret bool
	// emptyOK makes a variable or flag set to "" a value of its own
	// instead of "unset" (FACE_GREET_TEXT="" greets with the mic only).
	emptyOK bool
	parse   func(c *config, v string) error

	// path is the field of a file or directory on this machine (made by
	// pathSetting): a leading "~" is expanded once, by parseConfig.
	path func(c *config) *string
	// noHome is what a path setting whose default starts with "~" does
	// without a home directory: its field is "" and this is said.
	noHome string
	// sw is the rule of an on/off setting (made by switchSetting), on
	// its field.
	sw *switchRule
	on func(c *config) *bool

	// field is the config field of a setting made by fieldSetting
	// ("Perception.Consumers.GreetHourEnd"), whose default and range check
	// its component holds; show writes the field's value as the setting
	// is written, unit ("seconds") ends the want of its range errors.
	field string
	show  func(c *config) string
	unit  string
}

// componentDefaults is the configuration as its components default it:
// where the default of a setting made by fieldSetting comes from, so it
// is written once, in the component that owns the field.
var componentDefaults = config{
	HTTP:        bridge.DefaultConfig(),
	ACP:         acp.DefaultConfig(),
	ACPClient:   acpclient.DefaultConfig(),
	Permissions: agentconn.Policy{KidDeny: agentconn.DefaultKidDeny},
	Pool:        acp.DefaultPoolConfig(),
	Voice:       voice.DefaultConfig(),
	Steerable:   steerable.DefaultConfig(),

	Modes:      admin.DefaultModesConfig(),
	ConvoLog:   convolog.DefaultConfig(),
	Admin:      admin.DefaultConfig(),
	Perception: perception.DefaultConfig(),
	Social:     social.Config{Settings: social.DefaultSettings()},
	Vision:     vision.DefaultConfig(),
	Periphery:  periphery.DefaultConfig(),
	Narrative:  llm.DefaultNarrativeConfig(),
	MCP:        defaultMCPConfig(),
	Memory:     memstore.DefaultConfig(),
	Tier1:      tier1.DefaultConfig(),
	Sidecar:    sidecar.DefaultConfig(),
	Xiaozhi:    xiaozhi.DefaultConfig(),
	UI:         ui.DefaultConfig(),
}

// fieldOf is the field of c at path, dot-separated field names from config
// ("Perception.Consumers.GreetHourEnd"). A path that names no field of
// type T is a mistake in the settings table, found when it is built.
func fieldOf[T any](c *config, path string) *T {
	v := reflect.ValueOf(c).Elem()
	for _, name := range strings.Split(path, ".") {
		if v = v.FieldByName(name); !v.IsValid() {
			panic("config has no field " + path)
		}
	}
	p, ok := v.Addr().Interface().(*T)
	if !ok {
		panic(fmt.Sprintf("config field %s is a %s, not a %T", path, v.Type(), *new(T)))
	}
	return p
}

// fieldSetting is a setting filling the config field at path whose default
// and range check are its component's: the default is the field's value
// in componentDefaults written by format, and the component's Validate
// errors on the field are reported on this setting (config.onSettings),
// unit ("seconds") ending their want. parse checks the syntax only.
func fieldSetting[T any](env, path, unit, help string, parse func(*T, string) error, format func(T) string) setting {
	return setting{env: env, help: help, field: path, unit: unit,
		def:   format(*fieldOf[T](&componentDefaults, path)),
		parse: func(c *config, v string) error { return parse(fieldOf[T](c, path), v) },
		show:  func(c *config) string { return format(*fieldOf[T](c, path)) }}
}

// secondsField is a fieldSetting of a time.Duration written in seconds.
func secondsField(env, path, help string) setting {
	return fieldSetting(env, path, "seconds", help, parseSeconds, formatSeconds)
}

// millisField is a fieldSetting of a time.Duration written in whole
// milliseconds.
func millisField(env, path, help string) setting {
	return fieldSetting(env, path, "milliseconds", help, parseMillis,
		func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) })
}

// hoursField is a fieldSetting of a time.Duration written in hours (a
// decimal allowed). Its want has no unit: "want 0 or more", as it always
// read.
func hoursField(env, path, help string) setting {
	return fieldSetting(env, path, "", help, func(dst *time.Duration, v string) error { return parseAmount(dst, v, time.Hour) },
		func(d time.Duration) string { return strconv.FormatFloat(d.Hours(), 'f', -1, 64) })
}

// intField is a fieldSetting of an int.
func intField(env, path, help string) setting {
	return fieldSetting(env, path, "", help, parseInt, strconv.Itoa)
}

// numberField is a fieldSetting of a float64.
func numberField(env, path, help string) setting {
	return fieldSetting(env, path, "", help, parseFloat, func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) })
}

// offField is a fieldSetting of a time.Duration written in units
// (seconds, minutes, hours; a decimal allowed) where 0 switches the
// behaviour off: it is stored as −1, since a zero field means "the
// default" to the component.
func offField(env, path string, unit time.Duration, help string) setting {
	return fieldSetting(env, path, "", help, func(dst *time.Duration, v string) error { return parseOptSeconds(dst, v, unit) },
		func(d time.Duration) string {
			return strconv.FormatFloat(float64(max(d, 0))/float64(unit), 'f', -1, 64)
		})
}

// textField is a fieldSetting of a string, taken as it is.
func textField(env, path, help string) setting {
	return fieldSetting(env, path, "", help, func(dst *string, v string) error { *dst = v; return nil }, func(v string) string { return v })
}

// trimmedField is a fieldSetting of a string, its surrounding white space
// dropped.
func trimmedField(env, path, help string) setting {
	return fieldSetting(env, path, "", help, func(dst *string, v string) error { *dst = strings.TrimSpace(v); return nil }, func(v string) string { return v })
}

// listField is a fieldSetting of a comma-separated list, blanks dropped.
func listField(env, path, help string) setting {
	return fieldSetting(env, path, "", help, func(dst *[]string, v string) error { *dst = splitList(v); return nil },
		func(l []string) string { return strings.Join(l, ",") })
}

// pathField is a pathSetting on the config field at path, its default the
// field's in componentDefaults and its range checked by its component.
func pathField(env, path, help string) setting {
	s := pathSetting(env, *fieldOf[string](&componentDefaults, path), help, func(c *config) *string { return fieldOf[string](c, path) })
	s.field = path
	s.show = func(c *config) string { return *fieldOf[string](c, path) }
	return s
}

// switchField is a switchSetting on the config field at path, its default
// the field's in componentDefaults, written in the rule's words.
func switchField(env, path, help string, rule switchRule) setting {
	s := switchSetting(env, rule.word(*fieldOf[bool](&componentDefaults, path)), help, rule,
		func(c *config) *bool { return fieldOf[bool](c, path) })
	s.field = path
	s.show = func(c *config) string { return rule.word(*fieldOf[bool](c, path)) }
	return s
}

// secretValue makes the setting a secret: never logged nor shown.
func (s setting) secretValue() setting {
	s.secret = true
	return s
}

// emptyIsAValue makes "" a value of the setting rather than "unset".
func (s setting) emptyIsAValue() setting {
	s.emptyOK = true
	return s
}

// pathSetting is a setting naming a file or directory on this machine.
func pathSetting(env, def, help string, field func(c *config) *string) setting {
	return setting{env: env, def: def, help: help, path: field,
		parse: func(c *config, v string) error { *field(c) = v; return nil }}
}

// orWithoutHome sets what the feature does when the default's "~" cannot
// be expanded.
func (s setting) orWithoutHome(fallback string) setting {
	s.noHome = fallback
	return s
}

// switchSetting is an on/off setting read with rule; its help ends with
// the rule.
func switchSetting(env, def, help string, rule switchRule, field func(c *config) *bool) setting {
	return setting{env: env, def: def, help: help + "; " + rule.String(), sw: &rule, on: field,
		parse: func(c *config, v string) error { *field(c) = rule.read(v); return nil }}
}

// switchRule is how bridge.py read one of its on/off variables, kept
// exactly: a value is on when it is one of on, or, when on is nil, when
// it is none of off. fold compares the value trimmed and lower-cased.
type switchRule struct {
	on, off []string
	fold    bool
}

// bridge.py's switch rules.
var (
	// kidRule is DOTTY_KID_MODE's: "on" is off.
	kidRule = switchRule{on: []string{"1", "true", "yes"}, fold: true}
	// greeterRule is the greeter's switches'.
	greeterRule = switchRule{on: []string{"1", "true", "yes", "on"}, fold: true}
	// exactOneRule is the camera, dream, dance, sound-turner and sidecar
	// switches': "true" is off.
	exactOneRule = switchRule{on: []string{"1"}}
	// wakeRule is WAKE_TURN_ENABLED's: "off" and "no" are on.
	wakeRule = switchRule{off: []string{"0", "false", "False"}}
)

// onWords and offWords are the values a switch is recognisably set with,
// in any case.
var (
	onWords  = []string{"1", "true", "yes", "on"}
	offWords = []string{"0", "false", "no", "off"}
)

// word writes on as the rule's defaults are written: true and false for
// a rule read in any case, 1 and 0 for one read exactly.
func (r switchRule) word(on bool) string {
	if r.fold {
		return strconv.FormatBool(on)
	}
	return map[bool]string{true: "1", false: "0"}[on]
}

// read is the switch's value for v.
func (r switchRule) read(v string) bool {
	if r.fold {
		v = strings.ToLower(strings.TrimSpace(v))
	}
	if r.on != nil {
		return slices.Contains(r.on, v)
	}
	return !slices.Contains(r.off, v)
}

// check says when name's value v is not what it looks like: not a word
// of onWords or offWords, or one the rule reads against its meaning
// ("on" for kid mode is off). "" when v is read as it says.
func (r switchRule) check(name, v string) string {
	got := r.read(v)
	w := strings.ToLower(strings.TrimSpace(v))
	if (got && slices.Contains(onWords, w)) || (!got && slices.Contains(offWords, w)) {
		return ""
	}
	return fmt.Sprintf("%s %q is read as %s: this switch is %s", name, v, onOrOff(got), r)
}

// String says which values the rule reads as what.
func (r switchRule) String() string {
	words, is, rest := r.on, "on", "off"
	if words == nil {
		words, is, rest = r.off, "off", "on"
	}
	list := strings.Join(words, ", ")
	if n := len(words); n > 1 {
		list = strings.Join(words[:n-1], ", ") + " or " + words[n-1]
	}
	if r.fold {
		return is + " for " + list + " in any case, " + rest + " for anything else"
	}
	return is + " only for exactly " + list + ", " + rest + " for anything else"
}

func onOrOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// agentKeeps are the bridge settings the agent reads too, so its child
// keeps them: ZeroClaw's provider key fallback, its workspace, the zone.
var agentKeeps = []string{"OPENROUTER_API_KEY", "ZEROCLAW_WORKSPACE", "TZ"}

// agentDropEnv is every bridge setting's variable except agentKeeps: the
// agent child does not see the bridge's tokens, passwords and model keys,
// which an agent with shell tools could otherwise read from its
// environment.
func agentDropEnv() []string { return settingsEnvExcept(agentKeeps) }

// settingsEnvExcept is every bridge setting's variable except keep: what a
// child process started by the bridge must not inherit.
func settingsEnvExcept(keep []string) []string {
	var out []string
	for _, s := range settings {
		if !slices.Contains(keep, s.env) {
			out = append(out, s.env)
		}
	}
	return out
}

// flagName is the kebab-case flag of the setting: PORT → port.
func (s setting) flagName() string {
	return strings.ReplaceAll(strings.ToLower(s.env), "_", "-")
}

// Messages of syntax errors; each follows `invalid NAME "value": `.
const (
	wantSeconds = "want a number of seconds"
	wantInteger = "want an integer"
	wantMiB     = "want a whole number of MiB"
	wantHost    = "want an IP address or a host name of this machine, such as 0.0.0.0 (every interface) or 127.0.0.1"
)

// settings is every setting, in the order of -h and docs/configuration.md.
var settings = []setting{
	fieldSetting("BRIDGE_HOST", "HTTP.Host", "", "listen host: an address of this machine or a name resolving to one", parseHost, func(v string) string { return v }),
	intField("PORT", "HTTP.Port", "listen port; 0 picks a free port"),
	secondsField("BRIDGE_IDLE_TIMEOUT", "HTTP.IdleTimeout", "seconds a kept-alive connection may sit with no request before it is closed"),
	secondsField("BRIDGE_BODY_TIMEOUT", "HTTP.BodyTimeout", "seconds a client has to send a JSON request body in full"),
	secondsField("BRIDGE_UPLOAD_TIMEOUT", "HTTP.UploadTimeout", "seconds a client has to send a photo, audio clip or firmware recording in full"),
	secondsField("BRIDGE_SHUTDOWN_GRACE", "HTTP.ShutdownGrace", "seconds voice turns and other requests in flight may run on at SIGTERM or SIGINT while new turns get 503; a turn still running then ends with its error frame or fallback reply"),
	intField("BRIDGE_MAX_CONNS", "HTTP.MaxConns", "most open connections (loopback peers get 32 more); a connection past it waits up to 10 s for a slot"),
	{env: "BRIDGE_PUBLIC_HOSTS", def: "", help: "more names of this machine, comma-separated, without scheme or port: a reverse proxy's public name, or the host's LAN address when the bridge runs in a container; the dashboard and the household's reads answer only a Host naming this machine, and writes only pages on it",
		parse: func(c *config, v string) error { return parsePublicHosts(&c.Access.PublicHosts, v) }},
	fieldSetting("BRIDGE_UPLOAD_BUDGET", "HTTP.UploadBudget", "", "MiB of request bodies (photos, clips, recordings, JSON over 16 KiB) held in memory at once, all clients together; a body past it waits for room within its deadline, then gets 503",
		parseMiB, func(b int64) string { return strconv.FormatInt(b>>20, 10) }),
	pathSetting("ZEROCLAW_BIN", "", "agent binary, run as `<bin> acp`; a missing file is reported on /health. Unset: zeroclaw on PATH, then "+fallbackZeroclaw+", else the built-in demo agent",
		func(c *config) *string { return &c.Agent.Bin }),
	{env: "ZEROCLAW_ARGS", def: "", help: "extra agent arguments after `acp`, split into words like a POSIX shell",
		parse: func(c *config, v string) error {
			words, err := shellwords.Parse(v)
			if err != nil {
				return fmt.Errorf("want shell words (%w)", err)
			}
			c.Agent.Args = words
			return nil
		}},
	{env: "AGENT_PROTOCOL", def: protocolACP, help: "the agent's protocol: acp (ZeroClaw or any ACP agent, run as ZEROCLAW_BIN) or steerable (a steerable-sidecar, run as STEERABLE_CMD)",
		parse: func(c *config, v string) error {
			switch p := strings.ToLower(strings.TrimSpace(v)); p {
			case protocolACP, protocolSteerable:
				c.Agent.Protocol = p
				return nil
			}
			return errors.New("want acp or steerable")
		}},
	{env: "STEERABLE_CMD", def: steerable.DefaultCommand, help: "the steerable-sidecar command, split into words like a POSIX shell; unset and not installed: the built-in demo agent",
		parse: func(c *config, v string) error {
			words, err := shellwords.Parse(v)
			if err != nil || len(words) == 0 {
				return errors.New("want a command, split into shell words")
			}
			c.Agent.SteerableCmd = words
			return nil
		}},
	trimmedField("STEERABLE_PROVIDER", "Steerable.Provider", "the provider agent.chat.stream names (the sidecar builds openai, openai_compat, openai-compatible, ollama, anthropic, claude)"),
	trimmedField("STEERABLE_MODEL", "Steerable.Model", "the model agent.chat.stream names; the sidecar refuses chats without one (unset: left out, for the demo agent)"),
	trimmedField("STEERABLE_BASE_URL", "Steerable.BaseURL", "the OpenAI-compatible base URL agent.chat.stream names; unset: the sidecar's default, https://api.openai.com/v1"),
	{env: "STEERABLE_API_KEY", def: "", secret: true, help: "the API key agent.chat.stream carries; never logged, never in the sidecar's environment",
		parse: func(c *config, v string) error { c.Steerable.APIKey = steerable.Secret(v); return nil }},
	secondsField("ZEROCLAW_TIMEOUT", "Voice.Timeout", "seconds one voice turn may take, the wait for its session included"),
	secondsField("ZEROCLAW_INIT_TIMEOUT", "ACP.InitTimeout", "seconds to wait for the agent's initialize and session/new answers"),
	secondsField("ZEROCLAW_SESSION_IDLE", "Pool.SessionIdle", "replace an agent session idle for longer than this many seconds"),
	intField("ZEROCLAW_SESSION_MAX_TURNS", "Pool.SessionMaxTurns", "replace an agent session after this many turns"),
	secondsField("ZEROCLAW_SESSION_MAX_AGE_SEC", "Pool.SessionMaxAge", "replace an agent session older than this many seconds"),
	intField("ZEROCLAW_MAX_SESSIONS", "Pool.MaxSessions", "most live agent sessions; the least recently used idle one is closed to make room"),
	intField("ZEROCLAW_SESSION_QUEUE", "Pool.SessionQueue", "most voice turns waiting for a session while every session is in a turn; past it a turn answers the error fallback"),
	secondsField("ZEROCLAW_UNAVAILABLE_GRACE", "ACP.UnavailableGrace", "seconds a turn waits for a failed agent to come back before answering the offline fallback; later turns answer it at once until the agent is ready"),
	fieldSetting("ZEROCLAW_SESSION_KEY", "Pool.KeyMode", "", "session_id: one agent session per caller session_id; shared: one session for every caller, as bridge.py",
		func(dst *acp.SessionKeyMode, v string) error {
			*dst = acp.SessionKeyMode(strings.TrimSpace(v))
			return nil
		},
		func(m acp.SessionKeyMode) string { return string(m) }),
	textField("ZEROCLAW_AGENT_ALIAS", "ACPClient.AgentAlias", "agentAlias sent on session/new (ZeroClaw 0.8+ with several agents configured)"),
	pathField("ZEROCLAW_SESSION_CWD", "ACPClient.SessionCwd", "absolute working directory sent on session/new"),
	secondsField("ZEROCLAW_CANCEL_GRACE", "ACP.CancelGrace", "seconds a cancelled turn (barge-in) waits for the agent's cancelled result before a WARN; an ACP agent's session is kept, its next turn waiting for the result (at most ZEROCLAW_SESSION_IDLE), a steerable-sidecar's is retired"),
	listField("ZEROCLAW_PERMISSION_ALLOW", "Permissions.Allow", "comma-separated tools allowed without a log line (other tools are allowed and logged)"),
	listField("ZEROCLAW_PERMISSION_DENY", "Permissions.Deny", "comma-separated tools always refused; a kind:<kind> entry refuses every request of that ACP tool kind (kind:execute: any command)"),
	listField("ZEROCLAW_PERMISSION_KID_DENY", "Permissions.KidDeny", "comma-separated tools (or kind:<kind> entries) refused while kid mode is on; a request whose tool cannot be identified is refused too"),
	fieldSetting("ZEROCLAW_PERMISSION_UNIDENTIFIED", "Permissions.DenyUnidentified", "", "allow or deny: the decision, while kid mode is off, for a permission request whose tool cannot be identified (kid mode always refuses it)",
		func(deny *bool, v string) error {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "allow":
				*deny = false
			case "deny":
				*deny = true
			default:
				return errors.New("want allow or deny")
			}
			return nil
		}, func(deny bool) string { return map[bool]string{false: "allow", true: "deny"}[deny] }),
	switchField("DOTTY_KID_MODE", "Modes.KidDefault", "kid mode when its state file is missing or unrecognised; while on, camera.take_photo is refused", kidRule),
	pathField("DOTTY_KID_MODE_STATE", "Modes.KidStatePath", "kid-mode state file (true or false); when missing or unrecognised DOTTY_KID_MODE applies; read live at every turn"),
	pathField("DOTTY_SMART_MODE_STATE", "Modes.SmartStatePath", "smart-mode state file (true or false; missing means off)"),
	intField("MAX_SENTENCES", "Voice.MaxSentences", "sentence cap of spoken replies"),
	{env: "TZ", def: "Australia/Brisbane", help: "IANA time zone of prompt dates and log file names",
		parse: func(c *config, v string) error { return parseZone(&c.TZ, v) }},
	pathField("CONVO_LOG_DIR", "ConvoLog.Dir", "directory of the conversation logs"),
	fieldSetting("WEATHER_LOCATION", "Periphery.WeatherLocation", "", "place whose weather goes into the prompt's context line, fetched in the background; set to \"-\" to disable",
		func(dst *string, v string) error {
			if *dst = strings.TrimSpace(v); *dst == "-" {
				*dst = ""
			}
			return nil
		}, func(v string) string { return v }),
	fieldSetting("WEATHER_URL", "Periphery.WeatherURL", "", "wttr.in-compatible weather service base URL",
		func(dst *string, v string) error { *dst = strings.TrimRight(strings.TrimSpace(v), "/"); return nil }, func(v string) string { return v }),
	secondsField("WEATHER_TTL_SEC", "Periphery.WeatherTTL", "seconds a weather reading is used and between refreshes"),
	fieldSetting("CALENDAR_ID", "Periphery.CalendarIDs", "", "comma-separated Google Calendar ids for the context line's \"Today:\" part; empty disables the calendar",
		func(dst *[]string, v string) error { *dst = splitList(v); return nil }, func(v []string) string { return strings.Join(v, ",") }),
	pathSetting("CALENDAR_SA_PATH", "/root/.zeroclaw/secrets/google-calendar-sa.json", "service-account credentials given to gws as GOOGLE_APPLICATION_CREDENTIALS",
		func(c *config) *string { return &c.Periphery.CalendarSAPath }),
	pathSetting("GWS_BIN", componentDefaults.Periphery.GWSBin, "Google Workspace CLI used to list calendar events",
		func(c *config) *string { return &c.Periphery.GWSBin }),
	secondsField("CALENDAR_TTL_SEC", "Periphery.CalendarTTL", "seconds fetched calendar events stay usable"),
	secondsField("CALENDAR_POLL_SEC", "Periphery.CalendarPoll", "seconds between calendar refreshes"),
	textField("CALENDAR_HOUSEHOLD_BUCKET", "Periphery.HouseholdBucket", "bucket of calendar events not tagged with a person"),
	fieldSetting("CALENDAR_PERSON_PREFIX_RE", "Periphery.PersonPrefix", "", "regular expression with groups person and rest that tags an event summary with a person",
		func(dst **regexp.Regexp, v string) error {
			re, err := regexp.Compile(v)
			if err != nil {
				return errors.New("want a regular expression with named groups person and rest")
			}
			*dst = re
			return nil
		}, (*regexp.Regexp).String),
	fieldSetting("XIAOZHI_HOST", "Xiaozhi.Host", "", "host of xiaozhi-esp32-server's admin API; empty disables every outbound admin call (play_song answers \"can't reach\")",
		func(dst *string, v string) error { *dst = strings.TrimSpace(v); return nil }, func(v string) string { return v }),
	intField("XIAOZHI_OTA_PORT", "Xiaozhi.Port", "xiaozhi's HTTP port (admin API); the dashboard's host view also probes it over TCP"),
	intField("XIAOZHI_WS_PORT", "UI.XiaozhiWSPort", "xiaozhi's WebSocket port, probed over TCP for the dashboard's robot-reachability light"),
	textField("DOTTY_ADMIN_TOKEN", "Xiaozhi.Token", "sent as X-Admin-Token on every xiaozhi admin call when set; never logged").secretValue(),
	pathSetting("VOICE_MEMORY_DB", "/root/.zeroclaw/workspace/memory/brain.db", "ZeroClaw's SQLite memory, shared with the agent; created with ZeroClaw's schema when missing",
		func(c *config) *string { return &c.Memory.Path }),
	fieldSetting("VOICE_THINKER_URL", "Tier1.Thinker.URL", "", "OpenAI-compatible chat completions URL that think_hard asks",
		func(dst *string, v string) error { *dst = strings.TrimSpace(v); return nil }, func(v string) string { return v }),
	textField("VOICE_THINKER_MODEL", "Tier1.Thinker.Model", "model name think_hard sends"),
	secondsField("VOICE_THINKER_TIMEOUT", "Tier1.Thinker.Timeout", "seconds think_hard waits for the model; capped at 28 so the caller's 30 s wait is never exceeded"),
	textField("VOICE_PLAY_SONG_ASSET_BASE", "Tier1.SongAssetBase", "directory of the song files on the xiaozhi host; play_song asks xiaozhi to play <base>/<file>"),
	pathSetting("HOUSEHOLD_YAML_PATH", "~/.zeroclaw/household.yaml", "household roster (people ids, display_name, appearance) for the named greeting; re-read when it changes; missing means no roster",
		func(c *config) *string { return &c.Perception.Consumers.HouseholdPath }).orWithoutHome("no household roster"),
	intField("PERCEPTION_MAX_DEVICES", "Perception.MaxDevices", "most robots whose perception state is kept; a new one past it evicts the least recently seen with its events and caches"),
	intField("PERCEPTION_FEED_MAX_CLIENTS", "Perception.MaxFeedClients", "most /api/perception/feed clients at once; past it a client gets 503"),
	secondsField("FACE_GREET_MIN_INTERVAL_SEC", "Perception.Consumers.GreetMinInterval", "seconds between two face greetings of a device (legacy name FACE_GREET_COOLDOWN_SEC is used when this is unset)"),
	{env: "FACE_GREET_COOLDOWN_SEC", def: "", help: "legacy name of FACE_GREET_MIN_INTERVAL_SEC",
		parse: func(c *config, v string) error {
			if v == "" {
				c.legacyGreetMin = nil
				return nil
			}
			var d time.Duration
			if err := parseSeconds(&d, v); err != nil {
				return err
			}
			c.legacyGreetMin = &d
			return nil
		}},
	textField("FACE_GREET_TEXT", "Perception.Consumers.GreetText", "what a detected face makes the robot hear (inject-text); set to \"\" to only open the mic").emptyIsAValue(),
	intField("FACE_GREET_HOUR_START", "Perception.Consumers.GreetHourStart", "first local hour (TZ) of face greetings"),
	intField("FACE_GREET_HOUR_END", "Perception.Consumers.GreetHourEnd", "local hour at which face greetings stop (0 and 24: always greet)"),
	secondsField("FACE_NAME_GREET_MIN_INTERVAL_SEC", "Perception.Consumers.NameGreetMinInterval", "seconds between two named greetings of one person"),
	textField("FACE_NAME_GREET_TEMPLATE", "Perception.Consumers.NameGreetTemplate", "named greeting; {name} is the person's display name"),
	secondsField("FACE_NAME_GREET_QUIET_AFTER_CHAT_SEC", "Perception.Consumers.NameGreetQuiet", "no named greeting this many seconds after a chat"),
	secondsField("FACE_IDENTITY_TTL_SEC", "Perception.Consumers.IdentityTTL", "seconds a recognised identity stays fresh"),
	secondsField("FACE_IDENTITY_REFRESH_INTERVAL_SEC", "Perception.Consumers.RefreshInterval", "seconds between refreshes of the robot's identity pip"),
	secondsField("FACE_IDENTITY_REFRESH_QUIET_SEC", "Perception.Consumers.RefreshQuiet", "stop refreshing the identity pip this many seconds after the face left"),
	secondsField("FACE_LOST_ABORT_WINDOW_SEC", "Perception.Consumers.AbortWindow", "a face lost within this many seconds of a greeting aborts the conversation"),
	secondsField("FACE_LOST_ABORT_GRACE_SEC", "Perception.Consumers.AbortGrace", "seconds to wait for the face to come back before aborting"),
	switchField("WAKE_TURN_ENABLED", "Perception.Consumers.WakeTurnEnabled", "turn the head toward a wake word", wakeRule),
	intField("WAKE_TURN_YAW_DEG", "Perception.Consumers.WakeTurnYaw", "head yaw in degrees for a wake word heard left or right"),
	intField("WAKE_TURN_SPEED", "Perception.Consumers.WakeTurnSpeed", "head speed of a wake-word turn"),
	switchField("DOTTY_SOUND_TURNER_ENABLED", "Perception.Consumers.SoundTurnerEnabled", "turn the head toward sounds (the on-device localiser leans left)", exactOneRule),
	secondsField("SOUND_TURN_COOLDOWN_SEC", "Perception.Consumers.SoundTurnCooldown", "seconds between two sound turns of a device"),
	intField("SOUND_TURN_YAW_DEG", "Perception.Consumers.SoundTurnYaw", "head yaw in degrees for a sound heard left or right"),
	intField("SOUND_TURN_SPEED", "Perception.Consumers.SoundTurnSpeed", "head speed of a sound turn"),
	textField("PURR_AUDIO_PATH", "Perception.Consumers.PurrAudioPath", "purr sound played on a head pat, a path on the xiaozhi host (set an absolute one)"),
	secondsField("PURR_COOLDOWN_SEC", "Perception.Consumers.PurrCooldown", "seconds between two purrs of a device"),
	secondsField("PURR_DURATION_SEC", "Perception.Consumers.PurrDuration", "seconds a purr lasts (counted as chat time)"),
	switchField("SECURITY_WATCH_ENABLED", "Perception.Consumers.SecurityEnabled", "photograph and describe the room every SECURITY_CAPTURE_INTERVAL_SEC while a robot is in the security state", exactOneRule),
	secondsField("SECURITY_CAPTURE_INTERVAL_SEC", "Perception.Consumers.SecurityInterval", "seconds from the end of one security cycle to the next"),
	textField("SECURITY_VLM_PROMPT", "Perception.Consumers.SecurityPrompt", "question the security photos are described with"),
	secondsField("SECURITY_VLM_TIMEOUT_SEC", "Perception.Consumers.SecurityPhotoWait", "seconds a security cycle waits for its photo's description"),
	millisField("SECURITY_AUDIO_DURATION_MS", "Perception.Consumers.SecurityAudioDuration", "milliseconds of sound a security cycle asks the robot to record (capture-audio)"),
	secondsField("SECURITY_AUDIO_TIMEOUT_SEC", "Perception.Consumers.SecuritySoundWait", "seconds a security cycle waits for its clip's caption when xiaozhi accepted capture-audio"),
	intField("SECURITY_RING_BUFFER_SIZE", "Perception.Consumers.SecurityRingSize", "security records kept in memory for /api/security/recent and the dashboard"),
	{env: "DOTTY_LOCAL_TZ", def: "Australia/Brisbane", help: "IANA time zone of the security records' timestamps and file dates; unset: TZ's",
		parse: func(c *config, v string) error { return parseZone(&c.Perception.SecurityLocation, v) }},
	switchField("IDLE_PHOTOGRAPHER_ENABLED", "Perception.Consumers.IdleEnabled", "now and then photograph the room of an idle robot and keep notable descriptions", exactOneRule),
	secondsField("IDLE_PHOTOGRAPHER_SLEEP_MIN_SEC", "Perception.Consumers.IdleSleepMin", "shortest random wait in seconds between idle photos"),
	secondsField("IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC", "Perception.Consumers.IdleSleepMax", "longest random wait in seconds between idle photos"),
	secondsField("IDLE_PHOTOGRAPHER_RESULT_WAIT_SEC", "Perception.Consumers.IdleResultWait", "seconds the idle photographer waits after each accepted photo before judging its description"),
	numberField("IDLE_PHOTOGRAPHER_NOTABLE_JACCARD", "Perception.Consumers.IdleJaccard", "word-overlap (Jaccard, 0-1) with the last kept idle description at or above which a new one counts as a repeat"),
	switchField("SCENE_SYNTHESIS_ENABLED", "Perception.Consumers.SceneEnabled", "compose one-line scenes (who is there, what the robot sees and hears) for the prompt and the dashboard", exactOneRule),
	secondsField("SCENE_SYNTHESIS_INTERVAL_SEC", "Perception.Consumers.SceneInterval", "seconds without a recognised face, a caption or a story/security/sleep state after which every robot's scene is composed"),
	secondsField("SCENE_SYNTHESIS_MIN_GAP_SEC", "Perception.Consumers.SceneMinGap", "least seconds between two scenes of one robot"),
	offField("SPEAKER_STICKY_SEC", "Perception.Speaker.Sticky", time.Second, "seconds a self-identified speaker (\"it's Brett\") stays the speaker of that robot; 0 turns the latch off"),
	offField("SPEAKER_CALENDAR_WINDOW_MIN", "Perception.Speaker.CalendarWindow", time.Minute, "minutes around a person's calendar event in which it suggests they are the speaker; 0 turns the calendar signal off"),
	offField("SPEAKER_PERCEPTION_WINDOW_SEC", "Perception.Speaker.PerceptionWindow", time.Second, "seconds a recognised face on the robot suggests that person is the speaker; 0 turns the signal off"),
	// 0 and below are stored as −1, never asking: a zero field means the
	// default.
	fieldSetting("SPEAKER_ASK_THRESHOLD", "Perception.Speaker.AskThreshold", "", "confidence under which the speaker is only a guess (logged as ask); 0 never asks",
		func(dst *float64, v string) error {
			if err := parseFloat(dst, v); err != nil {
				return err
			}
			if *dst <= 0 {
				*dst = -1
			}
			return nil
		}, func(f float64) string { return strconv.FormatFloat(max(f, 0), 'f', -1, 64) }),
	// 0 is stored as −1, the block off: a zero field means the default.
	fieldSetting("PERSON_MEMORY_MAX_FACTS", "Memory.PersonMaxFacts", "", "approved facts about the speaker put into the prompt's [Person memory] block; 0 leaves the block out",
		func(dst *int, v string) error {
			if err := parseInt(dst, v); err != nil {
				return err
			}
			if *dst < 0 {
				return errors.New("want 0 or more")
			}
			if *dst == 0 {
				*dst = -1
			}
			return nil
		}, func(n int) string { return strconv.Itoa(max(n, 0)) }),
	textField("NARRATIVE_MODEL", "Narrative.Model", "model writing dreams and dance reflections, at VISION_API_URL with the vision key"),
	secondsField("NARRATIVE_TIMEOUT_SEC", "Narrative.Timeout", "seconds one dream or dance reflection may take"),
	switchField("DREAMER_ENABLED", "Social.Settings.DreamerEnabled", "write dreams while a robot sleeps", exactOneRule),
	secondsField("DREAM_WINDOW_SECONDS", "Social.Settings.DreamWindow", "seconds of a night the dreams are spread over"),
	intField("DREAM_COUNT_PER_NIGHT", "Social.Settings.DreamCount", "dreams per night"),
	switchField("DANCE_REFLECTOR_ENABLED", "Social.Settings.DanceReflectorEnabled", "write a private reflection after each dance", exactOneRule),
	switchField("GREETER_ENABLED", "Social.Settings.GreeterEnabled", "greet a recognised household member with a greeting the agent writes", greeterRule),
	switchField("GREETER_USE_FACE_DETECTED", "Social.Settings.GreetOnFaceSeen", "count a face detected without a name as an unknown face for the greeter", greeterRule),
	switchField("GREETER_GREET_UNKNOWN", "Social.Settings.GreetUnknown", "greet unknown faces too", greeterRule),
	switchField("GREETER_GREET_ANYONE", "Social.Settings.GreetAnyone", "let the agent greet any recognised name, as bridge.py did, not only household members (others get a fixed greeting)", greeterRule),
	hoursField("GREETER_COOLDOWN_HOURS", "Social.Settings.GreetCooldown", "hours between two greetings of one person (not before the first of the day)"),
	intField("GREETER_PER_DAY_MAX", "Social.Settings.GreetPerDayMax", "greetings of one person per local day"),
	intField("GREETER_GREETING_MAX_WORDS", "Social.Settings.GreetMaxWords", "longest greeting, in words, the agent is asked for"),
	pathSetting("GREETER_STATE_PATH", "~/.zeroclaw/greeter_state.json", "file keeping today's greeting counts across restarts (written atomically)",
		func(c *config) *string { return &c.Social.Settings.GreeterStatePath }).orWithoutHome("greeting counts kept in memory only"),
	intField("DASHBOARD_MAX_CLIENTS", "UI.MaxClients", "most dashboard turn-feed (/ui/events) clients at once; past it a client gets 503"),
	{env: "DOTTY_DASHBOARD_USER", def: "", help: "dashboard (/ui) user; Basic auth applies when both user and password are set",
		parse: func(c *config, v string) error { c.Access.User = v; return nil }},
	{env: "DOTTY_DASHBOARD_PASS", def: "", secret: true, help: "dashboard (/ui) password; never logged",
		parse: func(c *config, v string) error { c.Access.Pass = v; return nil }},
	{env: "BRIDGE_XIAOZHI_RESTART_CMD", def: "", secret: true, help: "command the dashboard's Reboot all runs to restart xiaozhi-server, split into words like a POSIX shell and run without one (write sh -c '…' for a shell), such as ssh -o BatchMode=yes root@nas 'cd /srv/xiaozhi && docker compose restart'; never logged; unset: Reboot all does not restart xiaozhi",
		parse: func(c *config, v string) error {
			words, err := shellwords.Parse(v)
			if err != nil || (len(words) == 0 && v != "") {
				return errors.New("want a command, split into shell words")
			}
			if len(words) == 0 {
				words = nil // unset: Reboot all skips xiaozhi
			}
			c.UI.Operator.XiaozhiRestart = words
			return nil
		}},
	secondsField("BRIDGE_XIAOZHI_RESTART_TIMEOUT", "UI.Operator.XiaozhiRestartTimeout", "seconds BRIDGE_XIAOZHI_RESTART_CMD may run before it is stopped (its whole process group)"),
	{env: "BRIDGE_DAEMON_UNITS", def: "", help: "systemd units the dashboard shows a state card for (read over D-Bus), comma-separated; unset: ZEROCLAW_DISCORD_UNIT, as bridge.py; - for none",
		parse: func(c *config, v string) error {
			if strings.TrimSpace(v) == "-" {
				c.UI.Operator.Units = []string{}
				return nil
			}
			list := splitList(v)
			for _, n := range list {
				if err := units.Check(n); err != nil {
					return fmt.Errorf("%q: %w", n, err)
				}
			}
			c.UI.Operator.Units = list
			return nil
		}},
	fieldSetting("DOTTY_VOICE_PROVIDER", "Admin.Provider", "", "voice provider xiaozhi uses: tier1slim makes smart mode hot-swap Tier1Slim's model on xiaozhi (and pushes it at start); anything else edits ZeroClaw's config.toml and restarts the agent",
		func(dst *string, v string) error { *dst = strings.ToLower(strings.TrimSpace(v)); return nil }, func(v string) string { return v }),
	textField("SMART_MODEL", "Admin.SmartOn.Model", "model while smart mode is on (both providers)"),
	textField("TIER1SLIM_LOCAL_URL", "Admin.SmartOff.URL", "Tier1Slim's model URL while smart mode is off"),
	textField("TIER1SLIM_LOCAL_MODEL", "Admin.SmartOff.Model", "Tier1Slim's model while smart mode is off"),
	textField("TIER1SLIM_LOCAL_API_KEY", "Admin.SmartOff.APIKey", "Tier1Slim's API key while smart mode is off").secretValue(),
	textField("TIER1SLIM_CLOUD_URL", "Admin.SmartOn.URL", "Tier1Slim's model URL while smart mode is on"),
	{env: "TIER1SLIM_CLOUD_API_KEY", def: "", secret: true, help: "Tier1Slim's API key while smart mode is on; unset: OPENROUTER_API_KEY",
		parse: func(c *config, v string) error { c.Keys.Cloud = v; return nil }},
	{env: "OPENROUTER_API_KEY", def: "", secret: true, help: "fallback for every cloud API key",
		parse: func(c *config, v string) error { c.Keys.OpenRouter = v; return nil }},
	textField("DOTTY_DEFAULT_MODEL", "Admin.DefaultModel", "ZeroClaw's model while smart mode is off (ZeroClaw provider)"),
	textField("VOICE_LOCAL_PROFILE_KEY", "Admin.LocalProfileKey", "set to edit a multi-profile config.toml: the profile key of the local model"),
	textField("VOICE_CLOUD_PROFILE_KEY", "Admin.CloudProfileKey", "profile key of the cloud model in a multi-profile config.toml"),
	pathField("ZEROCLAW_WORKSPACE", "Admin.Workspace", "ZeroClaw's workspace, where /admin/persona writes the persona files"),
	pathField("ZEROCLAW_VOICE_CFG", "Admin.VoiceConfig", "the voice agent's config.toml, edited by /admin/model and smart mode"),
	textField("ZEROCLAW_VOICE_UNIT", "Admin.VoiceUnit", "systemd unit reported for the voice agent (the bridge restarts its own agent child)"),
	pathField("ZEROCLAW_DISCORD_CFG", "Admin.DiscordConfig", "the Discord agent's config.toml, edited by /admin/model"),
	textField("ZEROCLAW_DISCORD_UNIT", "Admin.DiscordUnit", "systemd unit restarted after the Discord agent's model changed"),
	pathSetting("DOTTY_TOOL_ALLOWLIST", "/root/zeroclaw-bridge/state/tool-allowlist", "file of the tool allow list kept by /admin/safety (one tool per line); missing: bridge.py's default list",
		func(c *config) *string { return &c.ToolAllowList }),
	textField("VISION_MODEL", "Vision.Vision.Model", "vision model describing the robot's photos"),
	{env: "VISION_API_KEY", def: "", secret: true, help: "its API key; unset: OPENROUTER_API_KEY; none: the camera-offline answer",
		parse: func(c *config, v string) error { c.Keys.Vision = v; return nil }},
	textField("VISION_API_URL", "Vision.Vision.URL", "its OpenAI-compatible chat completions URL"),
	intField("VISION_MAX_WAITERS", "Vision.MaxWaiters", "most /api/vision/latest long-polls waiting at once; past it a poll gets 503"),
	secondsField("VISION_TIMEOUT", "Vision.Vision.Timeout", "seconds one photo description may take"),
	{env: "VLM_MODEL", def: "", help: "overrides VISION_MODEL for /api/vision/explain",
		parse: func(c *config, v string) error { c.Keys.VLMModel = v; return nil }},
	{env: "VLM_API_KEY", def: "", secret: true, help: "overrides the vision API key",
		parse: func(c *config, v string) error { c.Keys.VLM = v; return nil }},
	{env: "VLM_API_URL", def: "", help: "overrides VISION_API_URL",
		parse: func(c *config, v string) error { c.Keys.VLMURL = v; return nil }},
	textField("AUDIO_CAPTION_MODEL", "Vision.Audio.Model", "model describing audio clips (/api/audio/explain)"),
	{env: "AUDIO_CAPTION_API_KEY", def: "", secret: true, help: "its API key; unset: the vision key, then OPENROUTER_API_KEY",
		parse: func(c *config, v string) error { c.Keys.Audio = v; return nil }},
	textField("AUDIO_CAPTION_API_URL", "Vision.Audio.URL", "its OpenAI-compatible chat completions URL"),
	secondsField("AUDIO_CAPTION_TIMEOUT", "Vision.Audio.Timeout", "seconds one audio caption may take"),
	secondsField("DOTTY_IDLE_VISION_COOLDOWN_SEC", "Vision.RoomViewCooldown", "least seconds between two room-view model calls of a device"),
	secondsField("ROOM_VIEW_TALK_KICKOFF_GRACE_SEC", "Vision.TalkKickoffGrace", "a room view within this many seconds of entering talk still runs"),
	fieldSetting("STT_URL", "Sidecar.STT.URL", "", "full URL of an OpenAI-compatible /v1/audio/transcriptions endpoint; set it to serve the Stack-chan firmware's sidecar protocol",
		func(dst *string, v string) error { *dst = strings.TrimSpace(v); return nil }, func(v string) string { return v }),
	textField("STT_MODEL", "Sidecar.STT.Model", "speech-to-text model name"),
	{env: "STT_API_KEY", def: "", secret: true, help: "speech-to-text API key (Bearer), if the endpoint wants one",
		parse: func(c *config, v string) error { c.Sidecar.STT.APIKey = v; return nil }},
	textField("STT_LANGUAGE", "Sidecar.STT.Language", "language hint sent with every transcription"),
	secondsField("STT_TIMEOUT", "Sidecar.STT.Timeout", "seconds one transcription attempt may take"),
	textField("SIDECAR_PATH", "Sidecar.Path", "path of the firmware's listen endpoint"),
	textField("SIDECAR_TOKEN", "Sidecar.Token", "bearer token the firmware sends; required when STT_URL is set unless SIDECAR_ALLOW_NO_TOKEN=1").secretValue(),
	switchField("SIDECAR_ALLOW_NO_TOKEN", "Sidecar.AllowNoToken", "accept firmware requests without a token (trusted LAN only)", exactOneRule),
	pathSetting("SIDECAR_PERSONAS_DIR", "/root/zeroclaw-bridge/personas", "directory of <slug>.md persona files for X-Persona-Name",
		func(c *config) *string { return &c.Sidecar.PersonasDir }),
	textField("SIDECAR_DEFAULT_PERSONA", "Sidecar.DefaultPersona", "persona used without X-Persona-Name; empty: none"),
	secondsField("SIDECAR_DEADLINE", "Sidecar.Deadline", "seconds a firmware request may take in all (the firmware gives up at 15)"),
	switchField("DOTTY_MCP_ENABLED", "MCP.Enabled", "serve the robot's tools (look, take_photo, play_song, remember, …) over MCP on loopback and offer them to every agent session", greeterRule),
	trimmedField("DOTTY_MCP_LISTEN", "MCP.Listen", "loopback address and port of the robot's tools (path /mcp); port 0 picks a free one"),
	intField("DOTTY_MCP_CALLS_PER_MINUTE", "MCP.Tools.CallsPerMinute", "robot tool calls one agent session may make a minute; a call past it waits its turn (at most 5 s)"),
	intField("DOTTY_MCP_BURST", "MCP.Tools.Burst", "robot tool calls one agent session may make at once"),
	{env: "LOG_LEVEL", def: "info", help: "trace, debug, info, warn or error",
		parse: func(c *config, v string) error {
			switch l := strings.ToLower(strings.TrimSpace(v)); l {
			case "trace", "debug", "info", "warn", "error":
				c.LogLevel = hclog.LevelFromString(l)
				return nil
			}
			return errors.New("want trace, debug, info, warn or error")
		}},
	{env: "LOG_FORMAT", def: "text", help: "text or json",
		parse: func(c *config, v string) error {
			switch f := strings.ToLower(strings.TrimSpace(v)); f {
			case "text", "json":
				c.LogFormat = f
				return nil
			}
			return errors.New("want text or json")
		}},
}

// errHelp is returned by parseConfig for -h and --help.
var errHelp = errors.New("help requested")

// parseConfig reads the configuration from args (flags only) and from the
// environment through getenv. A flag wins over its variable, which wins
// over the default; a flag or variable set to "" counts as unset. Every
// problem is reported, joined, each naming its flag or variable; a setting
// that fails keeps its default in the returned config.
func parseConfig(args []string, lookup func(string) (string, bool)) (config, error) {
	return parseConfigHomes(args, lookup, systemHomes(lookup))
}

// parseConfigHomes is parseConfig with the home directories of "~"
// expansion.
func parseConfigHomes(args []string, lookup func(string) (string, bool), homes homeDirs) (config, error) {
	fs := flag.NewFlagSet("zeroclaw-bridge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flagVals := make(map[string]*string, len(settings))
	for _, s := range settings {
		flagVals[s.env] = fs.String(s.flagName(), "", s.help)
	}
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, errHelp
		}
		return config{}, fmt.Errorf("%w (run with -h for the flags)", err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q (run with -h for usage)", fs.Arg(0))
	}
	fromFlag := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { fromFlag[f.Name] = true })

	c := config{showVersion: *showVersion, raw: map[string]string{}, origin: map[string]string{}}
	var errs []error
	for _, s := range settings {
		if err := s.parse(&c, s.def); err != nil {
			panic(fmt.Sprintf("default of %s does not parse: %v", s.env, err))
		}
		v, origin := s.def, "default"
		if e, ok := lookup(s.env); e != "" || (ok && s.emptyOK) {
			v, origin = e, s.env
		}
		if fromFlag[s.flagName()] && (*flagVals[s.env] != "" || s.emptyOK) {
			v, origin = *flagVals[s.env], "-"+s.flagName()
		}
		shown := v
		if s.secret && v != "" {
			shown = "<redacted>"
		}
		c.raw[s.env], c.origin[s.env] = shown, origin
		if origin == "default" {
			continue
		}
		if err := s.parse(&c, v); err != nil {
			errs = append(errs, fmt.Errorf("invalid %s %q: %w", origin, shown, err))
			// The setting keeps its default, so validate stays quiet about it.
			if perr := s.parse(&c, s.def); perr != nil {
				panic(perr)
			}
			c.raw[s.env], c.origin[s.env] = s.def, "default"
			continue
		}
		if s.sw != nil {
			if w := s.sw.check(origin, v); w != "" {
				c.notes = append(c.notes, note{s.env, w})
			}
		}
	}
	errs = append(errs, c.expandPaths(homes)...)
	c.demo = demoStateDir(lookup, homes)
	if c.legacyGreetMin != nil && c.origin["FACE_GREET_MIN_INTERVAL_SEC"] == "default" {
		c.Perception.Consumers.GreetMinInterval = *c.legacyGreetMin
		c.origin["FACE_GREET_MIN_INTERVAL_SEC"] = c.origin["FACE_GREET_COOLDOWN_SEC"]
		c.raw["FACE_GREET_MIN_INTERVAL_SEC"] = c.raw["FACE_GREET_COOLDOWN_SEC"]
	}
	// bridge.py read the security watch's zone from DOTTY_LOCAL_TZ alone,
	// so a household that set only TZ had its security records dated in
	// Brisbane: unset, it follows TZ.
	if c.origin["DOTTY_LOCAL_TZ"] == "default" && c.origin["TZ"] != "default" {
		c.Perception.SecurityLocation = c.TZ
		c.raw["DOTTY_LOCAL_TZ"], c.origin["DOTTY_LOCAL_TZ"] = c.raw["TZ"], c.origin["TZ"]
	}
	errs = append(errs, c.validate())
	return c, errors.Join(errs...)
}

// expandPaths replaces the leading "~" of every path setting with its home
// directory, so no component ever sees one. A value that cannot be
// expanded is an error naming its flag or variable; a default that cannot
// is a note, and its feature goes without the file.
func (c *config) expandPaths(homes homeDirs) []error {
	var errs []error
	for _, s := range settings {
		if s.path == nil {
			continue
		}
		p := s.path(c)
		abs, err := homes.expand(*p)
		switch {
		case err == nil:
			*p = abs
		case c.set(s.env):
			errs = append(errs, fmt.Errorf("invalid %s %q: %w", c.origin[s.env], c.raw[s.env], err))
			*p = ""
		default:
			c.notes = append(c.notes, note{s.env, fmt.Sprintf("%s default %q: %v; %s (set %s to an absolute path)", s.env, *p, err, s.noHome, s.env)})
			*p = ""
		}
	}
	return errs
}

// validate checks the settings that depend on the agent protocol, and
// runs the Validate of the components whose settings are field settings.
// Each error names the flag or variable the value came from.
func (c config) validate() error {
	var errs []error
	check := func(env string, ok bool, value, want string) {
		if !ok {
			errs = append(errs, fmt.Errorf("invalid %s %q: %s", c.nameOf(env), c.shown(env, value), want))
		}
	}
	// One agent protocol at a time: a setting of the other one is a
	// mistake worth stopping for, not something to ignore.
	for _, env := range []string{"ZEROCLAW_BIN", "ZEROCLAW_ARGS", "ZEROCLAW_SESSION_CWD", "ZEROCLAW_PERMISSION_ALLOW", "ZEROCLAW_PERMISSION_DENY", "ZEROCLAW_PERMISSION_KID_DENY", "ZEROCLAW_PERMISSION_UNIDENTIFIED"} {
		check(env, c.Agent.Protocol != protocolSteerable || !c.set(env), c.raw[env], "applies to AGENT_PROTOCOL=acp (a steerable-sidecar is run as STEERABLE_CMD)")
	}
	for _, env := range []string{"STEERABLE_CMD", "STEERABLE_PROVIDER", "STEERABLE_MODEL", "STEERABLE_BASE_URL", "STEERABLE_API_KEY"} {
		check(env, c.Agent.Protocol == protocolSteerable || !c.set(env), c.raw[env], "needs AGENT_PROTOCOL=steerable")
	}
	// The components' own range checks, each error on its field's setting.
	errs = append(errs, c.onSettings("HTTP", c.HTTP.Validate())...)
	errs = append(errs, c.onSettings("Voice", c.Voice.Validate())...)
	errs = append(errs, c.onSettings("ACP", c.ACP.Validate())...)
	errs = append(errs, c.onSettings("ACPClient", c.ACPClient.Validate())...)
	errs = append(errs, c.onSettings("Pool", c.Pool.Validate())...)
	errs = append(errs, c.onSettings("Steerable", c.Steerable.Validate())...)
	errs = append(errs, c.onSettings("Perception", c.Perception.Validate())...)
	errs = append(errs, c.onSettings("Social", c.Social.Validate())...)
	errs = append(errs, c.onSettings("Vision", c.Vision.Validate())...)
	errs = append(errs, c.onSettings("Periphery", c.Periphery.Validate())...)
	errs = append(errs, c.onSettings("Narrative", c.Narrative.Validate())...)
	// A path emptied by its failed "~" expansion is reported already.
	memory := c.Memory
	if memory.Path == "" {
		memory.Path = c.raw["VOICE_MEMORY_DB"]
	}
	errs = append(errs, c.onSettings("Memory", memory.Validate())...)
	errs = append(errs, c.onSettings("Tier1", c.Tier1.Validate())...)
	errs = append(errs, c.onSettings("Sidecar", c.Sidecar.Validate())...)
	errs = append(errs, c.onSettings("Xiaozhi", c.Xiaozhi.Validate())...)
	errs = append(errs, c.onSettings("UI", c.UI.Validate())...)
	errs = append(errs, c.onSettings("Admin", c.Admin.Validate())...)
	errs = append(errs, c.onSettings("MCP", c.MCP.Validate())...)
	return errors.Join(errs...)
}

// onSettings reports a component's Validate errors on the settings of
// their fields: a *fieldcheck.Error on field F of the component at path
// becomes `invalid NAME "value": want …`, NAME the flag or variable of the
// setting whose field is path.F, the want ending with that setting's unit
// (or with the name of the setting it compares with). Other errors are
// returned as they are. c is a pointer: a config passed by value would be
// copied to the heap on every call (s.show takes its address).
func (c *config) onSettings(path string, err error) []error {
	var out []error
	for _, e := range fieldcheck.Split(fieldcheck.Under(path, err)) {
		var fe *fieldcheck.Error
		if !errors.As(e, &fe) {
			out = append(out, e)
			continue
		}
		s, ok := settingOf(fe.Field)
		if !ok {
			out = append(out, e)
			continue
		}
		want := "want " + fe.Want
		if r, ok := settingOf(fe.Ref); ok {
			want += " " + r.env
		} else if s.unit != "" {
			want += " " + s.unit
		}
		if fe.Why != "" {
			want += " (" + fe.Why + ")"
		}
		out = append(out, fmt.Errorf("invalid %s %q: %s", c.nameOf(s.env), c.shown(s.env, s.show(c)), want))
	}
	return out
}

// settingOf is the setting whose field is path ("Perception.Consumers.GreetHourEnd").
func settingOf(path string) (setting, bool) {
	if path == "" {
		return setting{}, false
	}
	for _, s := range settings {
		if s.field == path {
			return s, true
		}
	}
	return setting{}, false
}

// set reports whether env was given by a flag or the environment.
func (c config) set(env string) bool {
	o := c.origin[env]
	return o != "" && o != "default"
}

// nameOf is the flag or variable env's value came from; the variable when
// unknown or defaulted.
func (c config) nameOf(env string) string {
	if o := c.origin[env]; o != "" && o != "default" {
		return o
	}
	return env
}

// shown is env's value as the user wrote it, or the formatted typed value
// when the config was not built by parseConfig.
func (c config) shown(env, typed string) string {
	if v, ok := c.raw[env]; ok {
		return v
	}
	return typed
}

// effective lists the configuration as key/value pairs for the debug
// log line, as the bridge resolved it: switches as booleans, secrets as
// set or unset (saying where a fallback came from), everything else as
// given.
func (c config) effective() []any {
	resolved := c.resolvedValues()
	kv := make([]any, 0, 2*len(settings))
	for _, s := range settings {
		v, ok := c.raw[s.env]
		if !ok {
			v = s.def
		}
		if r, ok := resolved[s.env]; ok {
			v = r
		} else if s.secret {
			v = map[bool]string{true: "set", false: "unset"}[v != ""]
		}
		kv = append(kv, strings.ToLower(s.env), v)
	}
	return kv
}

// resolvedValues are the settings whose raw text says less than what the
// bridge made of it: switches, expanded paths, keys that fall back.
func (c config) resolvedValues() map[string]string {
	out := map[string]string{}
	for _, s := range settings {
		switch {
		case s.on != nil:
			out[s.env] = strconv.FormatBool(*s.on(&c))
		case s.path != nil:
			if p := *s.path(&c); p != c.raw[s.env] {
				out[s.env] = p
			}
		}
	}
	// Keys that fall back on one another say where the value came from.
	fallback := func(env, own string, from ...[2]string) {
		if own != "" {
			out[env] = "set"
			return
		}
		for _, f := range from {
			if f[1] != "" {
				out[env] = "set (from " + f[0] + ")"
				return
			}
		}
		out[env] = "unset"
	}
	or := [2]string{"OPENROUTER_API_KEY", c.Keys.OpenRouter}
	vision := [2]string{"VISION_API_KEY", c.Keys.Vision}
	fallback("VISION_API_KEY", c.Keys.Vision, or)
	fallback("VLM_API_KEY", c.Keys.VLM, vision, or)
	fallback("AUDIO_CAPTION_API_KEY", c.Keys.Audio, vision, or)
	fallback("TIER1SLIM_CLOUD_API_KEY", c.Keys.Cloud, or)
	return out
}

// parseSeconds reads a number of seconds, integer or decimal ("2.5").
// Ranges are validate's job; only non-numbers and values beyond a
// time.Duration are refused here.
func parseSeconds(dst *time.Duration, v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
		return errors.New(wantSeconds)
	}
	*dst = time.Duration(f * float64(time.Second))
	return nil
}

func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// parseHost reads a listen host: an IP address (brackets allowed) or a
// host name. Whether it is this machine's is found out by listening.
func parseHost(dst *string, v string) error {
	v = strings.TrimSpace(v)
	if in, ok := strings.CutPrefix(v, "["); ok {
		v, ok = strings.CutSuffix(in, "]")
		if !ok || !isIP(v) {
			return errors.New(wantHost)
		}
	}
	if !isIP(v) && (len(v) > 253 || !hostName().MatchString(v)) {
		return errors.New(wantHost)
	}
	*dst = v
	return nil
}

// parsePublicHosts reads BRIDGE_PUBLIC_HOSTS: host names or IP addresses
// (an IPv6 one may be in brackets), comma-separated, without scheme or
// port, since a Host's port is not compared.
func parsePublicHosts(dst *[]string, v string) error {
	var hosts []string
	for _, h := range splitList(v) {
		if err := parseHost(&h, h); err != nil {
			return fmt.Errorf("%q: want host names or IP addresses without scheme or port, comma-separated, such as dotty.example.com,192.168.1.20", h)
		}
		hosts = append(hosts, h)
	}
	*dst = hosts
	return nil
}

// isIP reports an IP address, an IPv6 one with its zone too
// ("fe80::1%eth0", which listening accepts).
func isIP(v string) bool {
	_, err := netip.ParseAddr(v)
	return err == nil
}

// hostName is a DNS name: dot-separated labels of letters, digits and
// inner hyphens (underscores too, as container names have them).
var hostName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?i)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$`)
})

// parseZone reads an IANA time zone name.
func parseZone(dst **time.Location, v string) error {
	loc, err := time.LoadLocation(strings.TrimSpace(v))
	if err != nil {
		return errors.New("want an IANA time zone name such as Australia/Brisbane")
	}
	*dst = loc
	return nil
}

// parseOptSeconds reads a number of units (seconds, minutes, hours) where 0
// switches the behaviour off: it is stored as −1, since a zero field
// means "the default" to the component.
func parseOptSeconds(dst *time.Duration, v string, unit time.Duration) error {
	if err := parseUnits(dst, v, unit); err != nil {
		return err
	}
	if *dst == 0 {
		*dst = -1
	}
	return nil
}

// parseUnits reads a non-negative number of units (a decimal allowed).
func parseUnits(dst *time.Duration, v string, unit time.Duration) error {
	var d time.Duration
	if err := parseAmount(&d, v, unit); err != nil {
		return err
	}
	if d < 0 {
		return errors.New("want 0 or more")
	}
	*dst = d
	return nil
}

// parseAmount reads a number of units (seconds, minutes, hours), a
// decimal allowed; its range is the component's to check.
func parseAmount(dst *time.Duration, v string, unit time.Duration) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/float64(unit) {
		return errors.New("want a number of " + map[time.Duration]string{time.Second: "seconds", time.Minute: "minutes", time.Hour: "hours"}[unit])
	}
	*dst = time.Duration(f * float64(unit))
	return nil
}

// parseMillis reads a whole number of milliseconds.
func parseMillis(dst *time.Duration, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n > math.MaxInt64/int64(time.Millisecond) || n < math.MinInt64/int64(time.Millisecond) {
		return errors.New("want a whole number of milliseconds")
	}
	*dst = time.Duration(n) * time.Millisecond
	return nil
}

// parseFloat reads a finite decimal number.
func parseFloat(dst *float64, v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return errors.New("want a number")
	}
	*dst = f
	return nil
}

// parseMiB reads a whole number of MiB into bytes.
func parseMiB(dst *int64, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n > math.MaxInt64>>20 || n < -(math.MaxInt64>>20) {
		return errors.New(wantMiB)
	}
	*dst = n << 20
	return nil
}

func parseInt(dst *int, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return errors.New(wantInteger)
	}
	*dst = n
	return nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// helpSections heads the help's groups: each names the setting its group
// starts with (the table is in this order), after docs/configuration.md's
// sections, where every setting is explained.
var helpSections = map[string]string{
	"BRIDGE_HOST":            "Listener",
	"ZEROCLAW_BIN":           "Agent and its sessions",
	"DOTTY_KID_MODE":         "Voice turns",
	"WEATHER_LOCATION":       "Prompt context: weather and calendar",
	"XIAOZHI_HOST":           "xiaozhi admin API",
	"VOICE_MEMORY_DB":        "Tier1Slim tools and voice memory",
	"HOUSEHOLD_YAML_PATH":    "Perception consumers",
	"SECURITY_WATCH_ENABLED": "Camera behaviours (security watch, idle photographer, scene synthesis)",
	"SPEAKER_STICKY_SEC":     "Who is talking, person memory, greetings, dreams and dances",
	"DASHBOARD_MAX_CLIENTS":  "Dashboard",
	"DOTTY_VOICE_PROVIDER":   "Admin routes and modes",
	"VISION_MODEL":           "Vision and audio",
	"STT_URL":                "Stack-chan firmware sidecar",
	"DOTTY_MCP_ENABLED":      "Robot tools over MCP",
	"LOG_LEVEL":              "Logging",
}

// usage writes the help text: the commands, then every flag with its
// variable and default.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString(`zeroclaw-bridge: the bridge between xiaozhi-esp32-server and a ZeroClaw ACP agent,
a drop-in replacement for dotty-stackchan's bridge.py.

Usage:
  zeroclaw-bridge [flags]                         serve HTTP (the default)
  zeroclaw-bridge demo-agent [-chunk-delay 40ms]  run the built-in demo ACP agent on stdin/stdout
  zeroclaw-bridge acp [-chunk-delay 40ms]         the same, named like "zeroclaw acp" (ZEROCLAW_BIN can point at this binary)
  zeroclaw-bridge mcp                             the robot's tools as an MCP server on stdin/stdout, relayed to the running bridge (mcp -h)
  zeroclaw-bridge version                         print the version (also -version)

Every flag has an environment variable of the same meaning. A flag wins over
its variable, which wins over the default; an empty value counts as unset.
Durations are in seconds and may be decimals. Every setting is explained in
docs/configuration.md, grouped as below.

Flags:
`)
	for _, s := range settings {
		if h, ok := helpSections[s.env]; ok {
			fmt.Fprintf(&b, "\n%s:\n", h)
		}
		def := s.def
		if def == "" {
			def = "unset"
		}
		fmt.Fprintf(&b, "  -%s value\n        %s\n        (env %s, default %s)\n", s.flagName(), s.help, s.env, def)
	}
	b.WriteString("\nOther:\n")
	b.WriteString("  -version\n        print the version and exit\n  -h, -help\n        print this help\n")
	_, _ = io.WriteString(w, b.String())
}
