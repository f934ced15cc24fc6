package bridgeapp

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/steerable"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/ui"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/periphery"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/sidecar"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/social"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/vision"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// env returns an environment lookup over the given key/value pairs.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var cmpConfig = []cmp.Option{
	cmp.Exporter(func(reflect.Type) bool { return true }),
	cmpopts.IgnoreFields(config{}, "raw", "origin", "notes"),
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b *time.Location) bool { return a.String() == b.String() }),
	cmp.Comparer(func(a, b *regexp.Regexp) bool { return a.String() == b.String() }),
}

// tableSocial is social.DefaultSettings as the settings table fills it:
// the agent timeout and identity bound have no variable, the greeting
// counts' file is under home.
func tableSocial(home string) social.Settings {
	s := social.DefaultSettings()
	s.GreetAgentTimeout, s.MaxGreetIdentities = 0, 0
	s.GreeterStatePath = filepath.Join(home, ".zeroclaw", "greeter_state.json")
	return s
}

// passwdHome is the current user's home in the password database: where
// "~" goes for a configuration without HOME, as env() gives.
func passwdHome(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no password entry for the current user: %v", err)
	}
	return u.HomeDir
}

func defaultConfig(t *testing.T) config {
	t.Helper()
	brisbane, err := time.LoadLocation("Australia/Brisbane")
	if err != nil {
		t.Fatal(err)
	}
	home := passwdHome(t)
	// Their values: bridge's, acp's, steerable's and admin's TestDefaultSettings.
	fields := componentFields()
	perceptionConfig := fields.Perception // its values: perception's TestDefaultConfig
	perceptionConfig.Consumers.HouseholdPath = filepath.Join(home, ".zeroclaw", "household.yaml")
	perceptionConfig.SecurityLocation = brisbane
	periphery := periphery.DefaultConfig() // its values: periphery's TestDefaultConfig
	periphery.CalendarSAPath = "/root/.zeroclaw/secrets/google-calendar-sa.json"
	memory := memstore.DefaultConfig() // its values: memstore's TestDefaultConfig
	memory.Path = "/root/.zeroclaw/workspace/memory/brain.db"
	sidecarConfig := sidecar.DefaultConfig() // its values: sidecar's TestDefaultConfig
	sidecarConfig.PersonasDir = "/root/zeroclaw-bridge/personas"
	return config{
		demo:      demoState{Dir: filepath.Join(home, ".local", "state", "zeroclaw-bridge")},
		HTTP:      fields.HTTP,
		ACP:       fields.ACP,
		Pool:      fields.Pool,
		Voice:     fields.Voice,
		Modes:     fields.Modes,
		ConvoLog:  fields.ConvoLog, // its value: convolog's TestDefaultConfig
		TZ:        brisbane,
		Periphery: periphery,
		LogLevel:  hclog.Info, LogFormat: "text",
		Xiaozhi:       xiaozhi.DefaultConfig(), // its values: xiaozhi's TestDefaultConfig
		Memory:        memory,
		Tier1:         tier1.DefaultConfig(), // its values: tier1's TestDefaultConfig
		Perception:    perceptionConfig,
		Narrative:     llm.DefaultNarrativeConfig(), // its values: llm's TestDefaultNarrativeConfig
		Permissions:   fields.Permissions,
		Agent:         agentChoice{Protocol: "acp", SteerableCmd: []string{"python3", "-m", "steerable_sidecar"}},
		Steerable:     fields.Steerable,
		Social:        social.Config{Settings: tableSocial(home)},
		UI:            ui.DefaultConfig(), // its values: ui's TestDefaultConfig
		Admin:         fields.Admin,
		ToolAllowList: "/root/zeroclaw-bridge/state/tool-allowlist",
		Vision:        vision.DefaultConfig(), // its values: vision's TestDefaultConfig
		Sidecar:       sidecarConfig,
		MCP:           fields.MCP,
	}
}

func TestParseConfigDefaults(t *testing.T) {
	got, err := parseConfig(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, defaultConfig(t), cmpConfig...); d != "" {
		t.Errorf("defaults (-got +want):\n%s", d)
	}
	for _, s := range settings {
		want := s.def
		if s.secret && want != "" {
			want = "<redacted>" // a secret default is not shown either
		}
		if got.origin[s.env] != "default" || got.raw[s.env] != want {
			t.Errorf("%s: origin %q raw %q, want default %q", s.env, got.origin[s.env], got.raw[s.env], want)
		}
	}
}

// TestParseConfigValues sets every setting through the environment and
// checks the typed result.
func TestParseConfigValues(t *testing.T) {
	utc := time.UTC
	tests := []struct {
		name string
		env  []string
		edit func(c *config) // applied to the defaults to get the expected config
	}{
		{"listener", []string{"BRIDGE_HOST", "127.0.0.1", "PORT", "9000"}, func(c *config) { c.HTTP.Host, c.HTTP.Port = "127.0.0.1", 9000 }},
		{"port 0 picks a free port", []string{"PORT", "0"}, func(c *config) { c.HTTP.Port = 0 }},
		{"host name", []string{"BRIDGE_HOST", " localhost "}, func(c *config) { c.HTTP.Host = "localhost" }},
		{"container name", []string{"BRIDGE_HOST", "zeroclaw_bridge.lan."}, func(c *config) { c.HTTP.Host = "zeroclaw_bridge.lan." }},
		{"upload budget", []string{"BRIDGE_UPLOAD_BUDGET", " 48 "}, func(c *config) { c.HTTP.UploadBudget = 48 << 20 }},
		{"IPv6 host, brackets allowed", []string{"BRIDGE_HOST", "[::1]"}, func(c *config) { c.HTTP.Host = "::1" }},
		{"IPv6 link-local host with its zone", []string{"BRIDGE_HOST", "fe80::1%eth0"}, func(c *config) { c.HTTP.Host = "fe80::1%eth0" }},
		{"agent binary", []string{"ZEROCLAW_BIN", "/opt/zc"}, func(c *config) { c.Agent.Bin = "/opt/zc" }},
		{"agent args are shell words", []string{"ZEROCLAW_ARGS", `--max-sessions 4 --note "two words" 'x y'`},
			func(c *config) { c.Agent.Args = []string{"--max-sessions", "4", "--note", "two words", "x y"} }},
		{"integer seconds", []string{"ZEROCLAW_TIMEOUT", "30", "ZEROCLAW_INIT_TIMEOUT", "4", "ZEROCLAW_SESSION_IDLE", "60", "ZEROCLAW_SESSION_MAX_AGE_SEC", "120", "ZEROCLAW_CANCEL_GRACE", "1"},
			func(c *config) {
				c.Voice.Timeout, c.ACP.InitTimeout, c.Pool.SessionIdle, c.Pool.SessionMaxAge, c.ACP.CancelGrace = 30*time.Second, 4*time.Second, time.Minute, 2*time.Minute, time.Second
			}},
		{"decimal seconds", []string{"ZEROCLAW_TIMEOUT", "2.5", "ZEROCLAW_CANCEL_GRACE", " 0.25 "},
			func(c *config) { c.Voice.Timeout, c.ACP.CancelGrace = 2500*time.Millisecond, 250*time.Millisecond }},
		{"session limits", []string{"ZEROCLAW_SESSION_MAX_TURNS", "3", "ZEROCLAW_MAX_SESSIONS", "1"},
			func(c *config) { c.Pool.SessionMaxTurns, c.Pool.MaxSessions = 3, 1 }},
		{"shared session", []string{"ZEROCLAW_SESSION_KEY", "shared"}, func(c *config) { c.Pool.KeyMode = acp.KeyShared }},
		{"alias and cwd", []string{"ZEROCLAW_AGENT_ALIAS", "dotty", "ZEROCLAW_SESSION_CWD", "/srv/dotty"},
			func(c *config) { c.ACPClient.AgentAlias, c.ACPClient.SessionCwd = "dotty", "/srv/dotty" }},
		{"permission lists", []string{"ZEROCLAW_PERMISSION_ALLOW", "memory_recall", "ZEROCLAW_PERMISSION_DENY", " shell, file_write ,,"},
			func(c *config) {
				c.Permissions.Allow, c.Permissions.Deny = []string{"memory_recall"}, []string{"shell", "file_write"}
			}},
		{"unidentified tools refused", []string{"ZEROCLAW_PERMISSION_UNIDENTIFIED", " Deny "}, func(c *config) { c.Permissions.DenyUnidentified = true }},
		{"kid mode 1", []string{"DOTTY_KID_MODE", "1"}, func(c *config) {}},
		{"kid mode YES", []string{"DOTTY_KID_MODE", "YES"}, func(c *config) {}},
		{"kid mode false", []string{"DOTTY_KID_MODE", "false"}, func(c *config) { c.Modes.KidDefault = false }},
		{"kid mode on is not truthy for bridge.py", []string{"DOTTY_KID_MODE", "on"}, func(c *config) { c.Modes.KidDefault = false }},
		{"voice settings", []string{"MAX_SENTENCES", "3", "TZ", "UTC", "CONVO_LOG_DIR", "/var/log/dotty"},
			func(c *config) {
				c.Voice.MaxSentences, c.TZ, c.ConvoLog.Dir = 3, utc, "/var/log/dotty"
				c.Perception.SecurityLocation = utc // DOTTY_LOCAL_TZ unset follows TZ
			}},
		{"DOTTY_LOCAL_TZ set wins over TZ", []string{"TZ", "UTC", "DOTTY_LOCAL_TZ", "Australia/Brisbane"},
			func(c *config) { c.TZ = utc }},
		{"json logs at debug", []string{"LOG_FORMAT", "JSON", "LOG_LEVEL", "Debug"}, func(c *config) { c.LogFormat, c.LogLevel = "json", hclog.Debug }},
		{"trace logs", []string{"LOG_LEVEL", "trace"}, func(c *config) { c.LogLevel = hclog.Trace }},
		{"mode state files", []string{"DOTTY_KID_MODE_STATE", "/s/kid", "DOTTY_SMART_MODE_STATE", "/s/smart"},
			func(c *config) { c.Modes.KidStatePath, c.Modes.SmartStatePath = "/s/kid", "/s/smart" }},
		{"weather", []string{"WEATHER_LOCATION", "Hobart", "WEATHER_URL", "http://127.0.0.1:9/", "WEATHER_TTL_SEC", "60"},
			func(c *config) {
				c.Periphery.WeatherLocation, c.Periphery.WeatherURL, c.Periphery.WeatherTTL = "Hobart", "http://127.0.0.1:9", time.Minute
			}},
		{"weather off", []string{"WEATHER_LOCATION", "-"}, func(c *config) { c.Periphery.WeatherLocation = "" }},
		{"calendar", []string{"CALENDAR_ID", "a@group.calendar.google.com, b", "GWS_BIN", "/opt/gws", "CALENDAR_SA_PATH", "/k.json",
			"CALENDAR_TTL_SEC", "100", "CALENDAR_POLL_SEC", "10", "CALENDAR_HOUSEHOLD_BUCKET", "_all", "CALENDAR_PERSON_PREFIX_RE", `^(?P<person>\w+): (?P<rest>.*)$`},
			func(c *config) {
				c.Periphery.CalendarIDs, c.Periphery.GWSBin, c.Periphery.CalendarSAPath = []string{"a@group.calendar.google.com", "b"}, "/opt/gws", "/k.json"
				c.Periphery.CalendarTTL, c.Periphery.CalendarPoll, c.Periphery.HouseholdBucket = 100*time.Second, 10*time.Second, "_all"
				c.Periphery.PersonPrefix = regexp.MustCompile(`^(?P<person>\w+): (?P<rest>.*)$`)
			}},
		{"xiaozhi", []string{"XIAOZHI_HOST", " 10.0.0.5 ", "XIAOZHI_OTA_PORT", "9003", "DOTTY_ADMIN_TOKEN", "s3cret"},
			func(c *config) { c.Xiaozhi.Host, c.Xiaozhi.Port, c.Xiaozhi.Token = "10.0.0.5", 9003, "s3cret" }},
		{"tier1", []string{"VOICE_MEMORY_DB", "/m/brain.db", "VOICE_THINKER_URL", "https://llm.lan/v1/chat/completions",
			"VOICE_THINKER_MODEL", "big", "VOICE_THINKER_TIMEOUT", "90", "VOICE_PLAY_SONG_ASSET_BASE", "/songs/"},
			func(c *config) {
				c.Memory.Path, c.Tier1.Thinker.URL, c.Tier1.Thinker.Model = "/m/brain.db", "https://llm.lan/v1/chat/completions", "big"
				c.Tier1.Thinker.Timeout, c.Tier1.SongAssetBase = 90*time.Second, "/songs/"
			}},
		{"greeting text may be empty", []string{"FACE_GREET_TEXT", ""}, func(c *config) { c.Perception.Consumers.GreetText = "" }},
		{"legacy greeting cooldown", []string{"FACE_GREET_COOLDOWN_SEC", "45"}, func(c *config) {
			c.Perception.Consumers.GreetMinInterval, c.legacyGreetMin = 45*time.Second, ptrTo(45*time.Second)
		}},
		{"new greeting interval wins over the legacy name", []string{"FACE_GREET_COOLDOWN_SEC", "45", "FACE_GREET_MIN_INTERVAL_SEC", "0"}, func(c *config) {
			c.Perception.Consumers.GreetMinInterval, c.legacyGreetMin = 0, ptrTo(45*time.Second)
		}},
		{"consumers", []string{"WAKE_TURN_ENABLED", "False", "DOTTY_SOUND_TURNER_ENABLED", "1", "SOUND_TURN_YAW_DEG", "30",
			"PURR_AUDIO_PATH", "/opt/purr.opus", "PURR_COOLDOWN_SEC", "0", "FACE_GREET_HOUR_START", "0", "FACE_GREET_HOUR_END", "24",
			"HOUSEHOLD_YAML_PATH", "/etc/household.yaml", "FACE_NAME_GREET_TEMPLATE", "Hey {name}"},
			func(c *config) {
				c.Perception.Consumers.WakeTurnEnabled, c.Perception.Consumers.SoundTurnerEnabled, c.Perception.Consumers.SoundTurnYaw = false, true, 30
				c.Perception.Consumers.PurrAudioPath, c.Perception.Consumers.PurrCooldown = "/opt/purr.opus", 0
				c.Perception.Consumers.GreetHourStart, c.Perception.Consumers.GreetHourEnd = 0, 24
				c.Perception.Consumers.HouseholdPath, c.Perception.Consumers.NameGreetTemplate = "/etc/household.yaml", "Hey {name}"
			}},
		{"camera consumers", []string{"SECURITY_WATCH_ENABLED", "0", "SECURITY_CAPTURE_INTERVAL_SEC", "5", "SECURITY_VLM_PROMPT", "What moved?",
			"SECURITY_VLM_TIMEOUT_SEC", "8", "SECURITY_AUDIO_DURATION_MS", "1500", "SECURITY_AUDIO_TIMEOUT_SEC", "9", "SECURITY_RING_BUFFER_SIZE", "10",
			"DOTTY_LOCAL_TZ", "UTC", "IDLE_PHOTOGRAPHER_ENABLED", "true", "IDLE_PHOTOGRAPHER_SLEEP_MIN_SEC", "0", "IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC", "30.5",
			"IDLE_PHOTOGRAPHER_RESULT_WAIT_SEC", "4", "IDLE_PHOTOGRAPHER_NOTABLE_JACCARD", " 0.5 ", "SCENE_SYNTHESIS_ENABLED", "0",
			"SCENE_SYNTHESIS_INTERVAL_SEC", "60", "SCENE_SYNTHESIS_MIN_GAP_SEC", "0"},
			func(c *config) {
				p := &c.Perception.Consumers
				p.SecurityEnabled, p.SecurityInterval, p.SecurityPrompt = false, 5*time.Second, "What moved?"
				p.SecurityPhotoWait, p.SecurityAudioDuration, p.SecuritySoundWait, p.SecurityRingSize = 8*time.Second, 1500*time.Millisecond, 9*time.Second, 10
				c.Perception.SecurityLocation = utc
				p.IdleEnabled, p.IdleSleepMin, p.IdleSleepMax = false, 0, 30500*time.Millisecond // exactly 1 turns it on
				p.IdleResultWait, p.IdleJaccard = 4*time.Second, 0.5
				p.SceneEnabled, p.SceneInterval, p.SceneMinGap = false, time.Minute, 0
			}},
		{"social and speaker", []string{"SPEAKER_STICKY_SEC", "0", "SPEAKER_CALENDAR_WINDOW_MIN", "45", "SPEAKER_PERCEPTION_WINDOW_SEC", "10",
			"SPEAKER_ASK_THRESHOLD", "0", "PERSON_MEMORY_MAX_FACTS", "0", "NARRATIVE_MODEL", "m", "NARRATIVE_TIMEOUT_SEC", "5",
			"DREAMER_ENABLED", "true", "DREAM_WINDOW_SECONDS", "60", "DREAM_COUNT_PER_NIGHT", "2", "DANCE_REFLECTOR_ENABLED", "0",
			"GREETER_ENABLED", "Off", "GREETER_USE_FACE_DETECTED", "on", "GREETER_GREET_UNKNOWN", "YES", "GREETER_GREET_ANYONE", "on", "GREETER_COOLDOWN_HOURS", "0.5",
			"GREETER_PER_DAY_MAX", "1", "GREETER_GREETING_MAX_WORDS", "9", "GREETER_STATE_PATH", "/s/greeter.json"},
			func(c *config) {
				c.Perception.Speaker = perception.SpeakerConfig{Sticky: -1, CalendarWindow: 45 * time.Minute, PerceptionWindow: 10 * time.Second, AskThreshold: -1}
				c.Memory.PersonMaxFacts = -1 // 0 leaves the block out
				c.Narrative.Model, c.Narrative.Timeout = "m", 5*time.Second
				s := &c.Social.Settings
				s.DreamerEnabled, s.DreamWindow, s.DreamCount, s.DanceReflectorEnabled = false, time.Minute, 2, false
				s.GreeterEnabled, s.GreetOnFaceSeen, s.GreetUnknown, s.GreetAnyone, s.GreetCooldown = false, true, true, true, 30*time.Minute
				s.GreetPerDayMax, s.GreetMaxWords, s.GreeterStatePath = 1, 9, "/s/greeter.json"
			}},
		{"steerable", []string{"AGENT_PROTOCOL", " Steerable ", "STEERABLE_CMD", "/opt/sidecar --quiet-ready", "STEERABLE_PROVIDER", "openai_compat",
			"STEERABLE_MODEL", "gpt-4o-mini", "STEERABLE_BASE_URL", "http://llm.lan/v1", "STEERABLE_API_KEY", "sk-1"},
			func(c *config) {
				c.Agent.Protocol, c.Agent.SteerableCmd = "steerable", []string{"/opt/sidecar", "--quiet-ready"}
				c.Steerable = steerable.Config{Provider: "openai_compat", Model: "gpt-4o-mini", BaseURL: "http://llm.lan/v1", APIKey: "sk-1"}
			}},
		{"wake turn stays on for other words", []string{"WAKE_TURN_ENABLED", "no"}, func(c *config) {}},
		{"sound turner needs exactly 1", []string{"DOTTY_SOUND_TURNER_ENABLED", "true"}, func(c *config) {}},
		{"dashboard", []string{"DOTTY_DASHBOARD_USER", "admin", "DOTTY_DASHBOARD_PASS", "pw"}, func(c *config) { c.Access.User, c.Access.Pass = "admin", "pw" }},
		{"operator controls", []string{"BRIDGE_XIAOZHI_RESTART_CMD", `ssh -o BatchMode=yes root@nas 'cd /srv/xiaozhi && docker compose restart'`,
			"BRIDGE_XIAOZHI_RESTART_TIMEOUT", "45", "BRIDGE_DAEMON_UNITS", "zeroclaw-discord, backup.timer"}, func(c *config) {
			c.UI.Operator.XiaozhiRestart = []string{"ssh", "-o", "BatchMode=yes", "root@nas", "cd /srv/xiaozhi && docker compose restart"}
			c.UI.Operator.XiaozhiRestartTimeout, c.UI.Operator.Units = 45*time.Second, []string{"zeroclaw-discord", "backup.timer"}
		}},
		{"no daemon cards", []string{"BRIDGE_DAEMON_UNITS", " - "}, func(c *config) { c.UI.Operator.Units = []string{} }},
		{"public hosts", []string{"BRIDGE_PUBLIC_HOSTS", " dotty.example.com, 192.168.1.20,[2001:db8::5],Dotty.LAN. ,"},
			func(c *config) {
				c.Access.PublicHosts = []string{"dotty.example.com", "192.168.1.20", "2001:db8::5", "Dotty.LAN."}
			}},
		{"modes", []string{"DOTTY_VOICE_PROVIDER", " Tier1Slim ", "TIER1SLIM_CLOUD_API_KEY", "k1", "OPENROUTER_API_KEY", "k2"},
			func(c *config) { c.Admin.Provider, c.Keys.Cloud, c.Keys.OpenRouter = "tier1slim", "k1", "k2" }},
		{"empty variables are unset", []string{"PORT", "", "LOG_LEVEL", "", "DOTTY_KID_MODE", ""}, func(c *config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(nil, env(tt.env...))
			if err != nil {
				t.Fatal(err)
			}
			want := defaultConfig(t)
			tt.edit(&want)
			if d := cmp.Diff(got, want, cmpConfig...); d != "" {
				t.Errorf("(-got +want):\n%s", d)
			}
		})
	}
}

func TestParseConfigPrecedence(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        func(string) (string, bool)
		wantPort   int
		wantOrigin string
	}{
		{"default", nil, env(), 8080, "default"},
		{"env over default", nil, env("PORT", "9000"), 9000, "PORT"},
		{"flag over env", []string{"-port", "7000"}, env("PORT", "9000"), 7000, "-port"},
		{"flag with = form", []string{"--port=7001"}, env("PORT", "9000"), 7001, "-port"},
		{"flag over default", []string{"-port", "0"}, env(), 0, "-port"},
		{"empty flag is unset", []string{"-port", ""}, env("PORT", "9000"), 9000, "PORT"},
		{"last flag wins", []string{"-port", "1", "-port", "2"}, env(), 2, "-port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.HTTP.Port != tt.wantPort || c.origin["PORT"] != tt.wantOrigin {
				t.Errorf("port %d from %q, want %d from %q", c.HTTP.Port, c.origin["PORT"], tt.wantPort, tt.wantOrigin)
			}
		})
	}
}

// TestParseConfigErrors pins every error message: syntax errors from the
// parsers, range errors from validate, flag errors, and that all problems
// are reported together.
func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string // exact lines
	}{
		{"timeout not a number", nil, []string{"ZEROCLAW_TIMEOUT", "abc"}, []string{`invalid ZEROCLAW_TIMEOUT "abc": want a number of seconds`}},
		{"timeout NaN", nil, []string{"ZEROCLAW_TIMEOUT", "NaN"}, []string{`invalid ZEROCLAW_TIMEOUT "NaN": want a number of seconds`}},
		{"timeout overflow", nil, []string{"ZEROCLAW_TIMEOUT", "1e300"}, []string{`invalid ZEROCLAW_TIMEOUT "1e300": want a number of seconds`}},
		{"timeout zero", nil, []string{"ZEROCLAW_TIMEOUT", "0"}, []string{`invalid ZEROCLAW_TIMEOUT "0": want more than 0 seconds`}},
		{"init timeout negative", nil, []string{"ZEROCLAW_INIT_TIMEOUT", "-1"}, []string{`invalid ZEROCLAW_INIT_TIMEOUT "-1": want more than 0 seconds`}},
		{"idle zero", nil, []string{"ZEROCLAW_SESSION_IDLE", "0.0"}, []string{`invalid ZEROCLAW_SESSION_IDLE "0.0": want more than 0 seconds`}},
		{"max age word", nil, []string{"ZEROCLAW_SESSION_MAX_AGE_SEC", "1h"}, []string{`invalid ZEROCLAW_SESSION_MAX_AGE_SEC "1h": want a number of seconds`}},
		{"cancel grace zero", nil, []string{"ZEROCLAW_CANCEL_GRACE", "0"}, []string{`invalid ZEROCLAW_CANCEL_GRACE "0": want more than 0 seconds`}},
		{"unidentified tools word", nil, []string{"ZEROCLAW_PERMISSION_UNIDENTIFIED", "refuse"}, []string{`invalid ZEROCLAW_PERMISSION_UNIDENTIFIED "refuse": want allow or deny`}},
		{"port word", nil, []string{"PORT", "http"}, []string{`invalid PORT "http": want an integer`}},
		{"host with a port", nil, []string{"BRIDGE_HOST", "0.0.0.0:8080"}, []string{`invalid BRIDGE_HOST "0.0.0.0:8080": ` + wantHost}},
		{"host with a space", []string{"-bridge-host", "my host"}, nil, []string{`invalid -bridge-host "my host": ` + wantHost}},
		{"host in brackets that is not an address", nil, []string{"BRIDGE_HOST", "[localhost]"}, []string{`invalid BRIDGE_HOST "[localhost]": ` + wantHost}},
		{"host URL", nil, []string{"BRIDGE_HOST", "http://0.0.0.0"}, []string{`invalid BRIDGE_HOST "http://0.0.0.0": ` + wantHost}},
		{"public host with a port", nil, []string{"BRIDGE_PUBLIC_HOSTS", "dotty.lan,dotty.example.com:443"},
			[]string{`invalid BRIDGE_PUBLIC_HOSTS "dotty.lan,dotty.example.com:443": "dotty.example.com:443": want host names or IP addresses without scheme or port, comma-separated, such as dotty.example.com,192.168.1.20`}},
		{"public host URL", []string{"-bridge-public-hosts", "https://dotty.example.com"}, nil,
			[]string{`invalid -bridge-public-hosts "https://dotty.example.com": "https://dotty.example.com": want host names or IP addresses without scheme or port, comma-separated, such as dotty.example.com,192.168.1.20`}},
		{"port range", nil, []string{"PORT", "70000"}, []string{`invalid PORT "70000": want a port from 0 to 65535`}},
		{"port negative", nil, []string{"PORT", "-1"}, []string{`invalid PORT "-1": want a port from 0 to 65535`}},
		{"upload budget zero", nil, []string{"BRIDGE_UPLOAD_BUDGET", "0"}, []string{`invalid BRIDGE_UPLOAD_BUDGET "0": want at least 1 (MiB)`}},
		{"upload budget in bytes", nil, []string{"BRIDGE_UPLOAD_BUDGET", "16MiB"}, []string{`invalid BRIDGE_UPLOAD_BUDGET "16MiB": want a whole number of MiB`}},
		{"upload budget overflow", nil, []string{"BRIDGE_UPLOAD_BUDGET", "9000000000000000"}, []string{`invalid BRIDGE_UPLOAD_BUDGET "9000000000000000": want a whole number of MiB`}},
		{"upload budget negative", nil, []string{"BRIDGE_UPLOAD_BUDGET", "-4"}, []string{`invalid BRIDGE_UPLOAD_BUDGET "-4": want at least 1 (MiB)`}},
		{"turns zero", nil, []string{"ZEROCLAW_SESSION_MAX_TURNS", "0"}, []string{`invalid ZEROCLAW_SESSION_MAX_TURNS "0": want at least 1`}},
		{"turns decimal", nil, []string{"ZEROCLAW_SESSION_MAX_TURNS", "2.5"}, []string{`invalid ZEROCLAW_SESSION_MAX_TURNS "2.5": want an integer`}},
		{"sessions negative", nil, []string{"ZEROCLAW_MAX_SESSIONS", "-1"}, []string{`invalid ZEROCLAW_MAX_SESSIONS "-1": want at least 1`}},
		{"sentences zero", nil, []string{"MAX_SENTENCES", "0"}, []string{`invalid MAX_SENTENCES "0": want at least 1`}},
		{"key mode", nil, []string{"ZEROCLAW_SESSION_KEY", "device"}, []string{`invalid ZEROCLAW_SESSION_KEY "device": want session_id or shared`}},
		{"relative cwd", nil, []string{"ZEROCLAW_SESSION_CWD", "work"}, []string{`invalid ZEROCLAW_SESSION_CWD "work": want an absolute path`}},
		{"unbalanced quotes", nil, []string{"ZEROCLAW_ARGS", `--x "y`}, []string{`invalid ZEROCLAW_ARGS "--x \"y": want shell words (invalid command line string)`}},
		{"time zone", nil, []string{"TZ", "Mars/Olympus"}, []string{`invalid TZ "Mars/Olympus": want an IANA time zone name such as Australia/Brisbane`}},
		{"log level", nil, []string{"LOG_LEVEL", "loud"}, []string{`invalid LOG_LEVEL "loud": want trace, debug, info, warn or error`}},
		{"log level off is refused", nil, []string{"LOG_LEVEL", "off"}, []string{`invalid LOG_LEVEL "off": want trace, debug, info, warn or error`}},
		{"log format", nil, []string{"LOG_FORMAT", "xml"}, []string{`invalid LOG_FORMAT "xml": want text or json`}},
		{"thinker url", nil, []string{"VOICE_THINKER_URL", "localhost:8080"}, []string{`invalid VOICE_THINKER_URL "localhost:8080": want an http or https URL`}},
		{"thinker timeout zero", nil, []string{"VOICE_THINKER_TIMEOUT", "0"}, []string{`invalid VOICE_THINKER_TIMEOUT "0": want more than 0 seconds`}},
		{"sidecar without a token", nil, []string{"STT_URL", "http://127.0.0.1:9/v1/audio/transcriptions"}, []string{`invalid SIDECAR_TOKEN "": want a token for the firmware sidecar (or SIDECAR_ALLOW_NO_TOKEN=1 on a trusted LAN)`}},
		{"sidecar deadline", nil, []string{"SIDECAR_DEADLINE", "15"}, []string{`invalid SIDECAR_DEADLINE "15": want at most 14 seconds (the firmware gives up at 15)`}},
		{"negative cooldown", nil, []string{"PURR_COOLDOWN_SEC", "-1"}, []string{`invalid PURR_COOLDOWN_SEC "-1": want 0 or more seconds`}},
		{"greeting hour", nil, []string{"FACE_GREET_HOUR_END", "25"}, []string{`invalid FACE_GREET_HOUR_END "25": want an hour from 0 to 24`}},
		{"refresh interval zero", nil, []string{"FACE_IDENTITY_REFRESH_INTERVAL_SEC", "0"}, []string{`invalid FACE_IDENTITY_REFRESH_INTERVAL_SEC "0": want more than 0 seconds`}},
		{"idle sleeps", nil, []string{"IDLE_PHOTOGRAPHER_SLEEP_MIN_SEC", "300", "IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC", "200"},
			[]string{`invalid IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC "200": want at least IDLE_PHOTOGRAPHER_SLEEP_MIN_SEC`}},
		{"jaccard range", nil, []string{"IDLE_PHOTOGRAPHER_NOTABLE_JACCARD", "1.5"}, []string{`invalid IDLE_PHOTOGRAPHER_NOTABLE_JACCARD "1.5": want a number from 0 to 1`}},
		{"jaccard word", nil, []string{"IDLE_PHOTOGRAPHER_NOTABLE_JACCARD", "high"}, []string{`invalid IDLE_PHOTOGRAPHER_NOTABLE_JACCARD "high": want a number`}},
		{"security interval zero", nil, []string{"SECURITY_CAPTURE_INTERVAL_SEC", "0"}, []string{`invalid SECURITY_CAPTURE_INTERVAL_SEC "0": want more than 0 seconds`}},
		{"security audio milliseconds", nil, []string{"SECURITY_AUDIO_DURATION_MS", "2.5"}, []string{`invalid SECURITY_AUDIO_DURATION_MS "2.5": want a whole number of milliseconds`}},
		{"security audio zero", nil, []string{"SECURITY_AUDIO_DURATION_MS", "0"}, []string{`invalid SECURITY_AUDIO_DURATION_MS "0": want more than 0 milliseconds`}},
		{"protocol", nil, []string{"AGENT_PROTOCOL", "mcp"}, []string{`invalid AGENT_PROTOCOL "mcp": want acp or steerable`}},
		{"zeroclaw setting with steerable", nil, []string{"AGENT_PROTOCOL", "steerable", "ZEROCLAW_BIN", "/usr/bin/zeroclaw"},
			[]string{`invalid ZEROCLAW_BIN "/usr/bin/zeroclaw": applies to AGENT_PROTOCOL=acp (a steerable-sidecar is run as STEERABLE_CMD)`}},
		{"steerable setting with acp", nil, []string{"STEERABLE_API_KEY", "sk-secret"},
			[]string{`invalid STEERABLE_API_KEY "<redacted>": needs AGENT_PROTOCOL=steerable`}},
		{"steerable url", nil, []string{"AGENT_PROTOCOL", "steerable", "STEERABLE_BASE_URL", "api.example"},
			[]string{`invalid STEERABLE_BASE_URL "api.example": want an http or https URL`}},
		{"dream count", nil, []string{"DREAM_COUNT_PER_NIGHT", "101"}, []string{`invalid DREAM_COUNT_PER_NIGHT "101": want 0 to 100`}},
		{"xiaozhi restart quote", nil, []string{"BRIDGE_XIAOZHI_RESTART_CMD", "ssh nas 'docker compose restart"},
			[]string{`invalid BRIDGE_XIAOZHI_RESTART_CMD "<redacted>": want a command, split into shell words`}},
		{"xiaozhi restart blank", nil, []string{"BRIDGE_XIAOZHI_RESTART_CMD", "   "},
			[]string{`invalid BRIDGE_XIAOZHI_RESTART_CMD "<redacted>": want a command, split into shell words`}},
		{"xiaozhi restart timeout", nil, []string{"BRIDGE_XIAOZHI_RESTART_TIMEOUT", "0"}, []string{`invalid BRIDGE_XIAOZHI_RESTART_TIMEOUT "0": want more than 0 seconds`}},
		{"daemon unit", nil, []string{"BRIDGE_DAEMON_UNITS", "zeroclaw-discord,rm -rf"},
			[]string{`invalid BRIDGE_DAEMON_UNITS "zeroclaw-discord,rm -rf": "rm -rf": want systemd unit names (letters, digits and :_.\@-), such as zeroclaw-discord or zeroclaw-discord.service`}},
		{"greeter cap", nil, []string{"GREETER_PER_DAY_MAX", "0"}, []string{`invalid GREETER_PER_DAY_MAX "0": want at least 1`}},
		{"greeter cooldown", nil, []string{"GREETER_COOLDOWN_HOURS", "-1"}, []string{`invalid GREETER_COOLDOWN_HOURS "-1": want 0 or more`}},
		{"speaker window word", nil, []string{"SPEAKER_CALENDAR_WINDOW_MIN", "soon"}, []string{`invalid SPEAKER_CALENDAR_WINDOW_MIN "soon": want a number of minutes`}},
		{"person facts", nil, []string{"PERSON_MEMORY_MAX_FACTS", "101"}, []string{`invalid PERSON_MEMORY_MAX_FACTS "101": want at most 100`}},
		{"person facts negative", nil, []string{"PERSON_MEMORY_MAX_FACTS", "-1"}, []string{`invalid PERSON_MEMORY_MAX_FACTS "-1": want 0 or more`}},
		{"security ring", nil, []string{"SECURITY_RING_BUFFER_SIZE", "0"}, []string{`invalid SECURITY_RING_BUFFER_SIZE "0": want at least 1`}},
		{"security zone", nil, []string{"DOTTY_LOCAL_TZ", "Nowhere"}, []string{`invalid DOTTY_LOCAL_TZ "Nowhere": want an IANA time zone name such as Australia/Brisbane`}},
		{"xiaozhi port range", nil, []string{"XIAOZHI_OTA_PORT", "0"}, []string{`invalid XIAOZHI_OTA_PORT "0": want a port from 1 to 65535`}},
		{"xiaozhi websocket port range", nil, []string{"XIAOZHI_WS_PORT", "70000"}, []string{`invalid XIAOZHI_WS_PORT "70000": want a port from 1 to 65535`}},
		{"flag value names the flag", []string{"-zeroclaw-timeout", "x"}, nil, []string{`invalid -zeroclaw-timeout "x": want a number of seconds`}},
		{"flag range names the flag", []string{"-port", "99999"}, nil, []string{`invalid -port "99999": want a port from 0 to 65535`}},
		{"every problem reported", nil, []string{"PORT", "x", "MAX_SENTENCES", "0", "LOG_FORMAT", "xml"},
			[]string{`invalid PORT "x": want an integer`, `invalid LOG_FORMAT "xml": want text or json`, `invalid MAX_SENTENCES "0": want at least 1`}},
		{"unknown flag", []string{"-no-such-flag"}, nil, []string{`flag provided but not defined: -no-such-flag (run with -h for the flags)`}},
		{"flag without value", []string{"-port"}, nil, []string{`flag needs an argument: -port (run with -h for the flags)`}},
		{"positional argument", []string{"serve"}, nil, []string{`unexpected argument "serve" (run with -h for usage)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig(tt.args, env(tt.env...))
			if err == nil {
				t.Fatal("parseConfig succeeded")
			}
			if d := cmp.Diff(errorLines(err), tt.want); d != "" {
				t.Errorf("error lines (-got +want):\n%s", d)
			}
		})
	}
}

// TestSwitchRules: each switch keeps bridge.py's rule exactly, and a value
// that is no on/off word, or one the rule reads against its meaning, is a
// note naming the flag or variable, the value, what it was read as and
// the words the switch takes.
func TestSwitchRules(t *testing.T) {
	kid := "this switch is on for 1, true or yes in any case, off for anything else"
	greeter := "this switch is on for 1, true, yes or on in any case, off for anything else"
	one := "this switch is on only for exactly 1, off for anything else"
	wake := "this switch is off only for exactly 0, false or False, on for anything else"
	tests := []struct {
		env, value string
		want       bool
		warn       string // the rule's words; "" for no note
	}{
		{"DOTTY_KID_MODE", "1", true, ""},
		{"DOTTY_KID_MODE", " TRUE ", true, ""},
		{"DOTTY_KID_MODE", "Yes", true, ""},
		{"DOTTY_KID_MODE", "on", false, kid},
		{"DOTTY_KID_MODE", "ON", false, kid},
		{"DOTTY_KID_MODE", "false", false, ""},
		{"DOTTY_KID_MODE", "no", false, ""},
		{"DOTTY_KID_MODE", "off", false, ""},
		{"DOTTY_KID_MODE", "0", false, ""},
		{"DOTTY_KID_MODE", "enabled", false, kid},
		{"GREETER_ENABLED", "on", true, ""},
		{"GREETER_ENABLED", "Off", false, ""},
		{"GREETER_ENABLED", "2", false, greeter},
		{"GREETER_GREET_UNKNOWN", "YES", true, ""},
		{"GREETER_USE_FACE_DETECTED", "nope", false, greeter},
		{"GREETER_GREET_ANYONE", "2", false, greeter},
		{"DOTTY_MCP_ENABLED", "off", false, ""},
		{"DOTTY_MCP_ENABLED", "disabled", false, greeter},
		{"SECURITY_WATCH_ENABLED", "1", true, ""},
		{"SECURITY_WATCH_ENABLED", "true", false, one},
		{"SECURITY_WATCH_ENABLED", "0", false, ""},
		{"SECURITY_WATCH_ENABLED", "off", false, ""},
		{"SECURITY_WATCH_ENABLED", " 1", false, one},
		{"IDLE_PHOTOGRAPHER_ENABLED", "yes", false, one},
		{"SCENE_SYNTHESIS_ENABLED", "on", false, one},
		{"DREAMER_ENABLED", "True", false, one},
		{"DANCE_REFLECTOR_ENABLED", "no", false, ""},
		{"DOTTY_SOUND_TURNER_ENABLED", "true", false, one},
		{"SIDECAR_ALLOW_NO_TOKEN", "yes", false, one},
		{"WAKE_TURN_ENABLED", "0", false, ""},
		{"WAKE_TURN_ENABLED", "false", false, ""},
		{"WAKE_TURN_ENABLED", "False", false, ""},
		{"WAKE_TURN_ENABLED", "FALSE", true, wake},
		{"WAKE_TURN_ENABLED", "off", true, wake},
		{"WAKE_TURN_ENABLED", "no", true, wake},
		{"WAKE_TURN_ENABLED", "yes", true, ""},
		{"WAKE_TURN_ENABLED", "maybe", true, wake},
	}
	switches := map[string]setting{}
	for _, s := range settings {
		if s.sw != nil {
			switches[s.env] = s
		}
	}
	if len(switches) != 14 {
		t.Errorf("%d switches, want 14", len(switches))
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			s, ok := switches[tt.env]
			if !ok {
				t.Fatalf("%s is not a switch", tt.env)
			}
			c, err := parseConfig(nil, env(tt.env, tt.value))
			if err != nil {
				t.Fatal(err)
			}
			if got := *s.on(&c); got != tt.want {
				t.Errorf("read as %v, want %v", got, tt.want)
			}
			var want []note
			if tt.warn != "" {
				want = []note{{tt.env, fmt.Sprintf("%s %q is read as %s: %s", tt.env, tt.value, onOrOff(tt.want), tt.warn)}}
			}
			if d := cmp.Diff(c.notes, want, cmp.AllowUnexported(note{}), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("notes (-got +want):\n%s", d)
			}
		})
	}
	// A flag is named as the flag; the -h text says each switch's rule.
	c, err := parseConfig([]string{"-dotty-kid-mode", "on"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.notes) != 1 || c.notes[0].text != `-dotty-kid-mode "on" is read as off: `+kid {
		t.Errorf("notes %v", c.notes)
	}
	for _, s := range switches {
		if w := s.sw.check(s.env, s.def); w != "" {
			t.Errorf("the default of %s warns: %s", s.env, w)
		}
		if !strings.HasSuffix(s.help, "; "+s.sw.String()) {
			t.Errorf("%s's help does not end with its rule: %s", s.env, s.help)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *config)
		want []string
	}{
		{"defaults", func(c *config) {}, nil},
		{"every range at once", func(c *config) {
			c.HTTP.Port, c.Voice.Timeout, c.ACP.InitTimeout, c.Pool.SessionIdle, c.Pool.SessionMaxAge, c.ACP.CancelGrace = 65536, 0, -time.Second, 0, 0, -1500*time.Millisecond
			c.Pool.SessionMaxTurns, c.Pool.MaxSessions, c.Voice.MaxSentences, c.ACPClient.SessionCwd = 0, 0, 0, "rel"
		}, []string{
			// In the order of the components' Validate: HTTP, Voice, ACP, Pool.
			`invalid PORT "65536": want a port from 0 to 65535`,
			`invalid ZEROCLAW_TIMEOUT "0": want more than 0 seconds`,
			`invalid MAX_SENTENCES "0": want at least 1`,
			`invalid ZEROCLAW_INIT_TIMEOUT "-1": want more than 0 seconds`,
			`invalid ZEROCLAW_CANCEL_GRACE "-1.5": want more than 0 seconds`,
			`invalid ZEROCLAW_SESSION_CWD "rel": want an absolute path`,
			`invalid ZEROCLAW_SESSION_IDLE "0": want more than 0 seconds`,
			`invalid ZEROCLAW_SESSION_MAX_AGE_SEC "0": want more than 0 seconds`,
			`invalid ZEROCLAW_SESSION_MAX_TURNS "0": want at least 1`,
			`invalid ZEROCLAW_MAX_SESSIONS "0": want at least 1`,
		}},
		{"boundaries", func(c *config) {
			c.HTTP.Port, c.Pool.SessionMaxTurns, c.Pool.MaxSessions, c.Voice.Timeout = 0, 1, 1, time.Nanosecond
			c.Perception.Consumers.PurrCooldown, c.Perception.Consumers.GreetHourStart, c.Perception.Consumers.GreetHourEnd = 0, 0, 24
		}, nil},
		{"shutdown grace", func(c *config) { c.HTTP.ShutdownGrace = 0 }, []string{
			`invalid BRIDGE_SHUTDOWN_GRACE "0": want more than 0 seconds`,
		}},
		{"refresh intervals", func(c *config) {
			c.Periphery.WeatherTTL, c.Periphery.CalendarTTL, c.Periphery.CalendarPoll = 0, 0, -time.Second
		}, []string{
			`invalid WEATHER_TTL_SEC "0": want more than 0 seconds`,
			`invalid CALENDAR_TTL_SEC "0": want more than 0 seconds`,
			`invalid CALENDAR_POLL_SEC "-1": want more than 0 seconds`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig(t)
			tt.edit(&c)
			err := c.validate()
			var got []string
			if err != nil {
				got = errorLines(err)
			}
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("(-got +want):\n%s", d)
			}
		})
	}
}

func TestSettingsTable(t *testing.T) {
	seenEnv, seenFlag := map[string]bool{}, map[string]bool{}
	for _, s := range settings {
		if seenEnv[s.env] || seenFlag[s.flagName()] {
			t.Errorf("%s listed twice", s.env)
		}
		seenEnv[s.env], seenFlag[s.flagName()] = true, true
		if s.help == "" {
			t.Errorf("%s has no help", s.env)
		}
		var c config
		if err := s.parse(&c, s.def); err != nil {
			t.Errorf("default %q of %s does not parse: %v", s.def, s.env, err)
		}
	}
	for _, want := range []string{"BRIDGE_HOST", "PORT", "BRIDGE_PUBLIC_HOSTS", "ZEROCLAW_BIN", "ZEROCLAW_ARGS", "ZEROCLAW_TIMEOUT",
		"ZEROCLAW_INIT_TIMEOUT", "ZEROCLAW_SESSION_IDLE", "ZEROCLAW_SESSION_MAX_TURNS", "ZEROCLAW_SESSION_MAX_AGE_SEC",
		"ZEROCLAW_MAX_SESSIONS", "ZEROCLAW_SESSION_KEY", "ZEROCLAW_AGENT_ALIAS", "ZEROCLAW_SESSION_CWD",
		"ZEROCLAW_CANCEL_GRACE", "ZEROCLAW_PERMISSION_ALLOW", "ZEROCLAW_PERMISSION_DENY", "ZEROCLAW_PERMISSION_KID_DENY", "ZEROCLAW_PERMISSION_UNIDENTIFIED", "DOTTY_KID_MODE",
		"MAX_SENTENCES", "TZ", "CONVO_LOG_DIR", "LOG_LEVEL", "LOG_FORMAT", "DOTTY_KID_MODE_STATE", "DOTTY_SMART_MODE_STATE",
		"WEATHER_LOCATION", "WEATHER_URL", "WEATHER_TTL_SEC", "CALENDAR_ID", "CALENDAR_SA_PATH", "GWS_BIN", "CALENDAR_TTL_SEC",
		"CALENDAR_POLL_SEC", "CALENDAR_HOUSEHOLD_BUCKET", "CALENDAR_PERSON_PREFIX_RE", "XIAOZHI_HOST", "XIAOZHI_OTA_PORT", "XIAOZHI_WS_PORT",
		"DOTTY_ADMIN_TOKEN", "VOICE_MEMORY_DB", "VOICE_THINKER_URL", "VOICE_THINKER_MODEL", "VOICE_THINKER_TIMEOUT",
		"VOICE_PLAY_SONG_ASSET_BASE", "HOUSEHOLD_YAML_PATH", "FACE_GREET_MIN_INTERVAL_SEC", "FACE_GREET_COOLDOWN_SEC",
		"FACE_GREET_TEXT", "FACE_GREET_HOUR_START", "FACE_GREET_HOUR_END", "FACE_NAME_GREET_MIN_INTERVAL_SEC",
		"FACE_NAME_GREET_TEMPLATE", "FACE_NAME_GREET_QUIET_AFTER_CHAT_SEC", "FACE_IDENTITY_TTL_SEC",
		"FACE_IDENTITY_REFRESH_INTERVAL_SEC", "FACE_IDENTITY_REFRESH_QUIET_SEC", "FACE_LOST_ABORT_WINDOW_SEC",
		"FACE_LOST_ABORT_GRACE_SEC", "WAKE_TURN_ENABLED", "WAKE_TURN_YAW_DEG", "WAKE_TURN_SPEED", "DOTTY_SOUND_TURNER_ENABLED",
		"SOUND_TURN_COOLDOWN_SEC", "SOUND_TURN_YAW_DEG", "SOUND_TURN_SPEED", "PURR_AUDIO_PATH", "PURR_COOLDOWN_SEC",
		"PURR_DURATION_SEC", "DOTTY_DASHBOARD_USER", "DOTTY_DASHBOARD_PASS", "DOTTY_VOICE_PROVIDER", "SMART_MODEL",
		"TIER1SLIM_LOCAL_URL", "TIER1SLIM_LOCAL_MODEL", "TIER1SLIM_LOCAL_API_KEY", "TIER1SLIM_CLOUD_URL",
		"TIER1SLIM_CLOUD_API_KEY", "OPENROUTER_API_KEY", "DOTTY_DEFAULT_MODEL", "VOICE_LOCAL_PROFILE_KEY",
		"VOICE_CLOUD_PROFILE_KEY", "ZEROCLAW_WORKSPACE", "ZEROCLAW_VOICE_CFG", "ZEROCLAW_VOICE_UNIT",
		"ZEROCLAW_DISCORD_CFG", "ZEROCLAW_DISCORD_UNIT", "DOTTY_TOOL_ALLOWLIST", "VISION_MODEL", "VISION_API_KEY",
		"VISION_API_URL", "VISION_TIMEOUT", "VLM_MODEL", "VLM_API_KEY", "VLM_API_URL", "AUDIO_CAPTION_MODEL",
		"AUDIO_CAPTION_API_KEY", "AUDIO_CAPTION_API_URL", "AUDIO_CAPTION_TIMEOUT", "DOTTY_IDLE_VISION_COOLDOWN_SEC",
		"ROOM_VIEW_TALK_KICKOFF_GRACE_SEC", "STT_URL", "STT_MODEL", "STT_API_KEY", "STT_LANGUAGE", "STT_TIMEOUT",
		"SIDECAR_PATH", "SIDECAR_TOKEN", "SIDECAR_ALLOW_NO_TOKEN", "SIDECAR_PERSONAS_DIR", "SIDECAR_DEFAULT_PERSONA",
		"SIDECAR_DEADLINE", "SECURITY_WATCH_ENABLED", "SECURITY_CAPTURE_INTERVAL_SEC", "SECURITY_VLM_PROMPT",
		"SECURITY_VLM_TIMEOUT_SEC", "SECURITY_AUDIO_DURATION_MS", "SECURITY_AUDIO_TIMEOUT_SEC", "SECURITY_RING_BUFFER_SIZE",
		"DOTTY_LOCAL_TZ", "IDLE_PHOTOGRAPHER_ENABLED", "IDLE_PHOTOGRAPHER_SLEEP_MIN_SEC", "IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC",
		"IDLE_PHOTOGRAPHER_RESULT_WAIT_SEC", "IDLE_PHOTOGRAPHER_NOTABLE_JACCARD", "SCENE_SYNTHESIS_ENABLED",
		"SCENE_SYNTHESIS_INTERVAL_SEC", "SCENE_SYNTHESIS_MIN_GAP_SEC", "SPEAKER_STICKY_SEC", "SPEAKER_CALENDAR_WINDOW_MIN",
		"SPEAKER_PERCEPTION_WINDOW_SEC", "SPEAKER_ASK_THRESHOLD", "PERSON_MEMORY_MAX_FACTS", "NARRATIVE_MODEL",
		"NARRATIVE_TIMEOUT_SEC", "DREAMER_ENABLED", "DREAM_WINDOW_SECONDS", "DREAM_COUNT_PER_NIGHT", "DANCE_REFLECTOR_ENABLED",
		"GREETER_ENABLED", "GREETER_USE_FACE_DETECTED", "GREETER_GREET_UNKNOWN", "GREETER_GREET_ANYONE", "GREETER_COOLDOWN_HOURS", "GREETER_PER_DAY_MAX",
		"GREETER_GREETING_MAX_WORDS", "GREETER_STATE_PATH", "AGENT_PROTOCOL", "STEERABLE_CMD", "STEERABLE_PROVIDER",
		"STEERABLE_MODEL", "STEERABLE_BASE_URL", "STEERABLE_API_KEY", "BRIDGE_SHUTDOWN_GRACE"} {
		if !seenEnv[want] {
			t.Errorf("setting %s missing", want)
		}
	}
	if len(settings) != 173 {
		t.Errorf("%d settings, want 173 (update docs/configuration.md too)", len(settings))
	}
	if got := (setting{env: "ZEROCLAW_SESSION_MAX_AGE_SEC"}).flagName(); got != "zeroclaw-session-max-age-sec" {
		t.Errorf("flagName = %q", got)
	}
}

// effectiveSettings parses args and getenv and returns the settings of
// the effective-config log line by key, and the line's key-value list.
func effectiveSettings(t *testing.T, args []string, getenv func(string) (string, bool)) (map[string]any, []any) {
	t.Helper()
	c, err := parseConfig(args, getenv)
	if err != nil {
		t.Fatal(err)
	}
	kv := c.effective()
	got := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		got[kv[i].(string)] = kv[i+1]
	}
	return got, kv
}

func TestEffectiveConfig(t *testing.T) {
	got, _ := effectiveSettings(t, []string{"-port", "9"}, env("ZEROCLAW_BIN", "/opt/zc"))
	if got["port"] != "9" || got["zeroclaw_bin"] != "/opt/zc" || got["tz"] != "Australia/Brisbane" || len(got) != len(settings) ||
		got["dotty_kid_mode"] != "true" || got["vision_api_key"] != "unset" {
		t.Errorf("effective() = %v", got)
	}
	// Resolved values: a switch as the boolean it became, a key fallback
	// named.
	got, kv := effectiveSettings(t, nil, env("DOTTY_KID_MODE", "on", "OPENROUTER_API_KEY", "sk-or", "SECURITY_WATCH_ENABLED", "true"))
	if got["dotty_kid_mode"] != "false" || got["security_watch_enabled"] != "false" || got["vision_api_key"] != "set (from OPENROUTER_API_KEY)" ||
		got["audio_caption_api_key"] != "set (from OPENROUTER_API_KEY)" || got["openrouter_api_key"] != "set" || slices.Contains(kv, any("sk-or")) {
		t.Errorf("resolved: %v", got)
	}
	// Paths as expanded, every switch as a boolean.
	got, _ = effectiveSettings(t, nil, env("HOME", "/home/h", "CONVO_LOG_DIR", "/var/log/dotty"))
	if got["household_yaml_path"] != "/home/h/.zeroclaw/household.yaml" || got["greeter_state_path"] != "/home/h/.zeroclaw/greeter_state.json" ||
		got["convo_log_dir"] != "/var/log/dotty" || got["sidecar_allow_no_token"] != "false" || got["wake_turn_enabled"] != "true" {
		t.Errorf("paths and switches: %v", got)
	}
	c, err := parseConfig(nil, env("DOTTY_ADMIN_TOKEN", "hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Xiaozhi.Token != "hunter2" || !slices.Contains(c.effective(), any("set")) || slices.Contains(c.effective(), any("hunter2")) {
		t.Errorf("DOTTY_ADMIN_TOKEN: typed %q, logged as %v", c.Xiaozhi.Token, c.effective())
	}

	// A secret setting is redacted in the log line and in error messages.
	saved := settings
	t.Cleanup(func() { settings = saved })
	settings = append(append([]setting(nil), saved...), setting{env: "TEST_TOKEN", help: "x", secret: true,
		parse: func(_ *config, v string) error {
			if v == "bad" {
				return errors.New("want good")
			}
			return nil
		}})
	c, err = parseConfig(nil, env("TEST_TOKEN", "hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	if kv := c.effective(); kv[len(kv)-1] != "set" {
		t.Errorf("secret shown as %v", kv[len(kv)-1])
	}
	if _, err := parseConfig(nil, env("TEST_TOKEN", "bad")); err == nil || strings.Contains(err.Error(), "bad") ||
		!strings.Contains(err.Error(), `invalid TEST_TOKEN "<redacted>": want good`) {
		t.Errorf("secret error %v", err)
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, arg := range []string{"-h", "--help", "-help"} {
		out.Reset()
		errOut.Reset()
		if err := Run(t.Context(), []string{arg}, env(), &out, &errOut); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		help := out.String()
		for _, s := range settings {
			def := s.def
			if def == "" {
				def = "unset"
			}
			if !strings.Contains(help, "\n  -"+s.flagName()+" value\n") || !strings.Contains(help, "(env "+s.env+", default "+def+")") {
				t.Errorf("%s: help lacks -%s with env %s and default %s", arg, s.flagName(), s.env, def)
			}
		}
		for _, want := range []string{"demo-agent", "-chunk-delay", "-version"} {
			if !strings.Contains(help, want) {
				t.Errorf("%s: help lacks %s", arg, want)
			}
		}
		if errOut.Len() != 0 {
			t.Errorf("%s wrote to stderr: %q", arg, errOut.String())
		}
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        func(string) (string, bool)
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "invalid env", env: env("ZEROCLAW_TIMEOUT", "abc"), wantCode: 2,
			wantStderr: "zeroclaw-bridge: invalid ZEROCLAW_TIMEOUT \"abc\": want a number of seconds\n"},
		{name: "two invalid values, two lines", env: env("PORT", "x", "LOG_LEVEL", "y"), wantCode: 2,
			wantStderr: "zeroclaw-bridge: invalid PORT \"x\": want an integer\nzeroclaw-bridge: invalid LOG_LEVEL \"y\": want trace, debug, info, warn or error\n"},
		{name: "bad flag", args: []string{"-no-such-flag"}, env: env(), wantCode: 2,
			wantStderr: "zeroclaw-bridge: flag provided but not defined: -no-such-flag (run with -h for the flags)\n"},
		{name: "demo-agent bad flag", args: []string{"demo-agent", "-chunk-delay", "soon"}, env: env(), wantCode: 2},
		{name: "mcp stray argument", args: []string{"mcp", "serve"}, env: env(), wantCode: 2,
			wantStderr: "zeroclaw-bridge: mcp: unexpected argument \"serve\"\n"},
		{name: "mcp bad log level", args: []string{"mcp", "-log-level", "loud"}, env: env(), wantCode: 2,
			wantStderr: "zeroclaw-bridge: mcp: invalid -log-level \"loud\": want trace, debug, info, warn or error\n"},
		{name: "version subcommand", args: []string{"version"}, env: env(), wantStdout: versionText()},
		{name: "version flag", args: []string{"-version"}, env: env(), wantStdout: versionText()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := exitCode(Run(t.Context(), tt.args, tt.env, &out, &errOut), &errOut)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut.String())
			}
			if out.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", out.String(), tt.wantStdout)
			}
			if tt.wantStderr != "" && errOut.String() != tt.wantStderr {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.wantStderr)
			}
		})
	}
	var errOut bytes.Buffer
	if code := exitCode(errors.New("listen on :80: permission denied"), &errOut); code != 1 ||
		errOut.String() != "zeroclaw-bridge: listen on :80: permission denied\n" {
		t.Errorf("runtime error: exit %d, stderr %q", code, errOut.String())
	}
}

func TestAgentSelection(t *testing.T) {
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	onPath := func(name string) (string, error) { return "/usr/bin/" + name, nil }
	self := func() (string, error) { return "/usr/local/bin/zeroclaw-bridge", nil }
	tests := []struct {
		name     string
		cfg      config
		lk       lookups
		wantCmd  string
		wantArgs []string
		wantWarn bool
	}{
		{"ZEROCLAW_BIN wins even when missing",
			config{Agent: agentChoice{Bin: "/nonexistent/zeroclaw", Args: []string{"--max-sessions", "4"}}},
			lookups{lookPath: onPath, executable: self}, "/nonexistent/zeroclaw", []string{"acp", "--max-sessions", "4"}, false},
		{"zeroclaw on PATH", config{Agent: agentChoice{Args: []string{"-v"}}}, lookups{lookPath: onPath, executable: self},
			"/usr/bin/zeroclaw", []string{"acp", "-v"}, false},
		{"demo agent fallback ignores ZEROCLAW_ARGS", config{Agent: agentChoice{Args: []string{"-v"}}}, lookups{lookPath: notFound, executable: self},
			"/usr/local/bin/zeroclaw-bridge", []string{"demo-agent"}, true},
		{"steerable: STEERABLE_CMD wins", config{Agent: agentChoice{Protocol: protocolSteerable, SteerableCmd: []string{"/opt/sidecar", "--quiet-ready"}},
			Steerable: steerable.Config{Model: "m"}, origin: map[string]string{"STEERABLE_CMD": "STEERABLE_CMD"}},
			lookups{lookPath: notFound, executable: self}, "/opt/sidecar", []string{"--quiet-ready"}, false},
		{"steerable: the default command when the module imports", config{Agent: agentChoice{Protocol: protocolSteerable, SteerableCmd: []string{"python3", "-m", "steerable_sidecar"}},
			Steerable: steerable.Config{Model: "m"}},
			lookups{lookPath: notFound, executable: self, probe: func(string, ...string) bool { return true }}, "python3", []string{"-m", "steerable_sidecar"}, false},
		{"steerable: a sidecar without STEERABLE_MODEL is warned of", config{Agent: agentChoice{Protocol: protocolSteerable, SteerableCmd: []string{"/opt/sidecar"}},
			origin: map[string]string{"STEERABLE_CMD": "STEERABLE_CMD"}},
			lookups{lookPath: notFound, executable: self}, "/opt/sidecar", []string{}, true},
		{"steerable: the demo agent speaks it when the sidecar is missing", config{Agent: agentChoice{Protocol: protocolSteerable, SteerableCmd: []string{"python3", "-m", "steerable_sidecar"}}},
			lookups{lookPath: onPath, executable: self, probe: func(string, ...string) bool { return false }},
			"/usr/local/bin/zeroclaw-bridge", []string{"demo-agent", "-protocol", "steerable"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &logs})
			cmd, args, err := agentCommand(tt.cfg, tt.lk, log)
			if err != nil {
				t.Fatal(err)
			}
			if cmd != tt.wantCmd || !cmp.Equal(args, tt.wantArgs) {
				t.Errorf("got %q %q, want %q %q", cmd, args, tt.wantCmd, tt.wantArgs)
			}
			warns := strings.Count(logs.String(), "[WARN]")
			if want := map[bool]int{true: 1, false: 0}[tt.wantWarn]; warns != want {
				t.Errorf("%d WARN lines, want %d:\n%s", warns, want, logs.String())
			}
			if tt.wantWarn && tt.cfg.Agent.Protocol == protocolSteerable && cmd != "/usr/local/bin/zeroclaw-bridge" && !strings.Contains(logs.String(), "STEERABLE_MODEL is unset") {
				t.Errorf("WARN line does not name STEERABLE_MODEL: %s", logs.String())
			}
			if tt.wantWarn && tt.cfg.Agent.Protocol != protocolSteerable {
				for _, place := range []string{"ZEROCLAW_BIN", "PATH", fallbackZeroclaw, "built-in demo agent"} {
					if !strings.Contains(logs.String(), place) {
						t.Errorf("WARN line does not mention %q: %s", place, logs.String())
					}
				}
			}
		})
	}
	_, _, err := agentCommand(config{}, lookups{lookPath: notFound, executable: func() (string, error) { return "", errors.New("no /proc") }}, hclog.NewNullLogger())
	if err == nil || !strings.Contains(err.Error(), "no /proc") {
		t.Errorf("missing own executable: %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestDemoModeKeepsFilesInTheStateDir: with no agent installed the demo
// mode moves every file still at its /root default under the user's state
// directory; a file setting given explicitly stays where it was put.
func TestDemoModeKeepsFilesInTheStateDir(t *testing.T) {
	state := t.TempDir()
	logs := filepath.Join(t.TempDir(), "logs") // build makes it
	cfg, err := parseConfig(nil, env("XDG_STATE_HOME", state, "CONVO_LOG_DIR", logs))
	if err != nil {
		t.Fatal(err)
	}
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	self := func() (string, error) { return "/usr/local/bin/zeroclaw-bridge", nil }
	app, err := build(cfg, hclog.NewNullLogger(), lookups{lookPath: notFound, executable: self})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(state, "zeroclaw-bridge")
	for name, got := range map[string]string{"memory": app.cfg.Memory.Path, "kid mode": app.cfg.Modes.KidStatePath,
		"workspace": app.cfg.Admin.Workspace, "greeter": app.cfg.Social.Settings.GreeterStatePath, "allow list": app.cfg.ToolAllowList} {
		if !strings.HasPrefix(got, dir+string(filepath.Separator)) && got != dir {
			t.Errorf("%s at %s, want it under %s", name, got, dir)
		}
	}
	if app.cfg.ConvoLog.Dir != logs {
		t.Errorf("an explicit CONVO_LOG_DIR moved to %s", app.cfg.ConvoLog.Dir)
	}

	// With an agent the production defaults stay bridge.py's.
	app, err = build(cfg, hclog.NewNullLogger(), lookups{lookPath: func(string) (string, error) { return "/usr/bin/zeroclaw", nil }, executable: self})
	if err != nil {
		t.Fatal(err)
	}
	if app.cfg.Memory.Path != "/root/.zeroclaw/workspace/memory/brain.db" {
		t.Errorf("with zeroclaw the memory is at %s", app.cfg.Memory.Path)
	}
}

// TestDemoBannerNamesWhatReplacesIt: the demo agent's banner says what
// gives real answers in the protocol chosen: ZEROCLAW_BIN for acp,
// STEERABLE_CMD for steerable (which refuses ZEROCLAW_BIN).
func TestDemoBannerNamesWhatReplacesIt(t *testing.T) {
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	self := func() (string, error) { return "/usr/local/bin/zeroclaw-bridge", nil }
	noSidecar := func(string, ...string) bool { return false }
	for protocol, want := range map[string]string{
		"acp":       "the built-in demo agent (install ZeroClaw or set ZEROCLAW_BIN for real answers)",
		"steerable": "the built-in demo agent (install the steerable-sidecar Python package or set STEERABLE_CMD for real answers)",
	} {
		cfg, err := parseConfig(nil, env("AGENT_PROTOCOL", protocol, "XDG_STATE_HOME", t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		app, err := build(cfg, hclog.NewNullLogger(), lookups{lookPath: notFound, executable: self, probe: noSidecar})
		if err != nil {
			t.Fatal(err)
		}
		if app.agent != want {
			t.Errorf("%s: banner %q, want %q", protocol, app.agent, want)
		}
	}
}

// TestFieldSettingsTakeTheComponentsDefaults: a setting made by
// fieldSetting has no default of its own. -h shows its component's
// default, the configuration holds it when nothing is set, and every
// field of a converted component's Config (but the few the bridge sets
// itself) is such a setting.
func TestFieldSettingsTakeTheComponentsDefaults(t *testing.T) {
	var help, errOut bytes.Buffer
	if err := Run(t.Context(), []string{"-h"}, env(), &help, &errOut); err != nil {
		t.Fatal(err)
	}
	got, err := parseConfig(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{}
	for _, s := range settings {
		if s.field == "" {
			continue
		}
		fields[s.field] = true
		want := s.show(&componentDefaults)
		if want == "" {
			want = "unset"
		}
		if !strings.Contains(help.String(), "(env "+s.env+", default "+want+")") {
			t.Errorf("-h does not show %s's default as its component's, %q", s.env, want)
		}
		if g, w := fieldValue(&got, s.field), fieldValue(&componentDefaults, s.field); !reflect.DeepEqual(g, w) {
			t.Errorf("%s unset: %s is %v, want the component's default %v", s.env, s.field, g, w)
		}
	}
	// The converted components, and their fields that are not field
	// settings: paths under home (path settings) and fields no variable sets.
	for _, conv := range []struct {
		path string
		typ  reflect.Type
		own  []string
	}{
		{"Perception.Consumers", reflect.TypeFor[perception.Consumers](), []string{"HouseholdPath", "QueueSize"}},
		{"Social.Settings", reflect.TypeFor[social.Settings](), []string{"GreeterStatePath", "GreetAgentTimeout", "MaxGreetIdentities", "QueueSize"}},
		{"Vision", reflect.TypeFor[vision.Config](), []string{"Vision", "Audio", "KidMode", "Household", "Perception", "MaxUpload",
			"LongPoll", "MaxDevices", "Cache", "Clock", "VisionDuration", "AudioDuration", "Logger"}},
		{"Vision.Vision", reflect.TypeFor[vision.Model](), []string{"APIKey", "HTTPClient"}}, // the key falls back at build
		{"Vision.Audio", reflect.TypeFor[vision.Model](), []string{"APIKey", "HTTPClient"}},
		{"HTTP", reflect.TypeFor[bridge.Config](), []string{"Version", "Logger", "Gatherer", "Agent", "Sessions", "Health", "TurnedAway",
			"UploadBudgetInUse", "UploadBudgetWaiting", "UploadsRefused", "UploadPaths", "Access"}},
		{"Voice", reflect.TypeFor[voice.Config](), []string{"Agent", "Heartbeat", "Location", "KidMode", "Perception", "Context",
			"Speaker", "PersonMemory", "Robot", "PersonMemoryWait", "ConvoLog", "Turns", "Metrics", "Logger", "MaxBodyBytes", "MaxContentRunes", "Stopping", "Clock"}},
		{"ACP", reflect.TypeFor[acp.Config](), []string{"Command", "Args", "Protocol", "Env", "DropEnv", "Dir", "StopGrace", "WriteTimeout",
			"ClientName", "ClientVersion", "Permissions", "BackoffInitial", "BackoffMax", "HealthyReset", "StderrLinesPerSecond", "Logger", "Metrics", "Clock"}},
		{"Pool", reflect.TypeFor[acp.PoolConfig](), []string{"MaxKeys", "ReapInterval", "Logger", "Metrics", "Clock"}},
		{"Permissions", reflect.TypeFor[agentconn.Policy](), []string{"AllowLive", "KidMode", "Logger"}},
		{"Steerable", reflect.TypeFor[steerable.Config](), []string{"APIKey", "Temperature", "HistoryChars", "PingInterval", "PingTimeout",
			"PingMisses", "MaxLine", "MaxReply"}}, // the key is a secret row of its own
		{"Periphery", reflect.TypeFor[periphery.Config](), []string{"Location", "GWSBin", "CalendarSAPath", "Logger", "Access", "Metrics",
			"RequestDuration", "RequestErrors", "HTTPClient", "Clock", "calendarTimeout", "weatherTimeout"}},
		{"Narrative", reflect.TypeFor[llm.NarrativeConfig](), []string{"URL", "APIKey", "HTTPClient", "Logger"}}, // VISION_API_URL's, at build
		{"Memory", reflect.TypeFor[memstore.Config](), []string{"Path", "AgentAlias", "QueueSize", "WriteBusyTimeout", "ReadBusyTimeout",
			"DrainTimeout", "Journal", "Logger", "Clock", "Health", "Metrics"}},
		{"Tier1", reflect.TypeFor[tier1.Config](), []string{"Memory", "Vision", "Xiaozhi", "People", "Thinker", "Metrics", "Logger", "Clock",
			"shortBudget", "longBudget"}},
		{"Tier1.Thinker", reflect.TypeFor[tier1.ThinkerConfig](), []string{"HTTPClient"}},
		{"Sidecar", reflect.TypeFor[sidecar.Config](), []string{"PersonasDir", "STT", "Voice", "Stopping", "STTDuration", "Metrics", "Logger"}},
		{"Sidecar.STT", reflect.TypeFor[sidecar.STT](), []string{"APIKey", "HTTPClient"}},
		{"Xiaozhi", reflect.TypeFor[xiaozhi.Config](), []string{"Logger", "HTTPClient"}},
		{"UI", reflect.TypeFor[ui.Config](), []string{"Turns", "Access", "Stopping", "Location", "Heartbeat", "Clock", "Controls", "Modes", "Robot",
			"SongAssetBase", "XiaozhiHost", "XiaozhiHTTPPort", "ProcDir", "SysDir", "StateDir", "RobotsSeen", "Operator", "Logger",
			"ConvoLogPath", "RecentEvents", "LatestPhoto", "PhotoList", "MemoryRecords", "ApproveMemory", "RedactMemory", "Version",
			"DemoAgent", "DemoAdvice"}}, // wired at build
		{"UI.Operator", reflect.TypeFor[ui.OperatorConfig](), []string{"Restart", "RestartDelay", "XiaozhiRestart", "XiaozhiRestartEnv", "Units", "Systemd"}},
		{"Perception", reflect.TypeFor[perception.Config](), []string{"Robot", "Senses", "Camera", "Consumers", "Speaker", "Calendar", "JournalDir",
			"JournalMetrics", "Health", "SecurityLocation", "Location", "Clock", "Stopping", "Keepalive", "Metrics", "RequestDuration", "Access",
			"Logger"}}, // SecurityLocation: DOTTY_LOCAL_TZ, a zone like TZ
		{"Perception.Speaker", reflect.TypeFor[perception.SpeakerConfig](), []string{"MaxLatches"}},
		{"Admin", reflect.TypeFor[admin.Config](), []string{"Modes", "Robot", "SmartOn", "SmartOff", "Safety", "Agent", "Sessions", "RestartUnit",
			"RestartDelay", "Clock", "Health", "Access", "Logger", "ZeroClawMCP"}}, // ZeroClawMCP: wired at build
		{"Admin.SmartOn", reflect.TypeFor[admin.Target](), []string{"APIKey"}}, // TIER1SLIM_CLOUD_API_KEY falls back at build
		{"Admin.SmartOff", reflect.TypeFor[admin.Target](), nil},
		{"Modes", reflect.TypeFor[admin.ModesConfig](), []string{"Metrics", "Logger", "Health"}},
		{"ConvoLog", reflect.TypeFor[convolog.Config](), []string{"Location", "Logger", "Failures", "Health"}},
		{"MCP", reflect.TypeFor[mcpConfig](), []string{"Tools", "listener"}},
		{"MCP.Tools", reflect.TypeFor[robottools.Config](), []string{"Robot", "Voice", "Vision", "Room", "Calendar", "Permissions", "KidMode",
			"MaxTokens", "MaxKeys", "MoodTTL", "RateWait", "PhotoWait", "Access", "Registry", "Logger", "Clock"}}, // wired at build; bounds an operator never needs
	} {
		for _, f := range reflect.VisibleFields(conv.typ) {
			if !fields[conv.path+"."+f.Name] && !slices.Contains(conv.own, f.Name) {
				t.Errorf("%s.%s has no field setting", conv.path, f.Name)
			}
		}
	}
}

// fieldValue is the value of c's field at path.
func fieldValue(c *config, path string) any { return fieldAt(c, path).Interface() }

// fieldAt is c's field at path.
func fieldAt(c *config, path string) reflect.Value {
	v := reflect.ValueOf(c).Elem()
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
	}
	return v
}

// componentFields is componentDefaults with only the fields of field
// settings: what parseConfig makes of the components' defaults when
// nothing is set.
func componentFields() config {
	var c config
	for _, s := range settings {
		if s.field != "" {
			fieldAt(&c, s.field).Set(fieldAt(&componentDefaults, s.field))
		}
	}
	return c
}

// TestComponentRangeErrorsNameTheSetting: a range error of a component's
// Validate is reported on the flag or variable the value came from, with
// the setting's unit, once.
func TestComponentRangeErrorsNameTheSetting(t *testing.T) {
	for _, tc := range []struct {
		args, env []string
		want      string
	}{
		{[]string{"-face-greet-hour-start", "-1"}, nil, `invalid -face-greet-hour-start "-1": want an hour from 0 to 24`},
		{nil, []string{"DOTTY_MCP_LISTEN", "0.0.0.0:9000"}, `invalid DOTTY_MCP_LISTEN "0.0.0.0:9000": want a loopback address and port, such as 127.0.0.1:0`},
		{[]string{"-dotty-mcp-burst", "0"}, nil, `invalid -dotty-mcp-burst "0": want at least 1`},
		{nil, []string{"SCENE_SYNTHESIS_INTERVAL_SEC", "-2.5"}, `invalid SCENE_SYNTHESIS_INTERVAL_SEC "-2.5": want more than 0 seconds`},
		{[]string{"-idle-photographer-sleep-min-sec", "10"}, []string{"IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC", "5"},
			`invalid IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC "5": want at least IDLE_PHOTOGRAPHER_SLEEP_MIN_SEC`},
		{nil, []string{"FACE_GREET_COOLDOWN_SEC", "-1"}, `invalid FACE_GREET_COOLDOWN_SEC "-1": want 0 or more seconds`},
		{[]string{"-dream-window-seconds", "0"}, nil, `invalid -dream-window-seconds "0": want more than 0 seconds`},
		{nil, []string{"GREETER_GREETING_MAX_WORDS", "0"}, `invalid GREETER_GREETING_MAX_WORDS "0": want at least 1`},
		{nil, []string{"VISION_API_URL", "openrouter.ai"}, `invalid VISION_API_URL "openrouter.ai": want an http or https URL`},
		{[]string{"-audio-caption-timeout", "0"}, nil, `invalid -audio-caption-timeout "0": want more than 0 seconds`},
		{[]string{"-bridge-upload-budget", "0"}, nil, `invalid -bridge-upload-budget "0": want at least 1 (MiB)`},
		{[]string{"-zeroclaw-session-cwd", "work"}, nil, `invalid -zeroclaw-session-cwd "work": want an absolute path`},
		{[]string{"-zeroclaw-session-key", "device"}, nil, `invalid -zeroclaw-session-key "device": want session_id or shared`},
		{[]string{"-agent-protocol", "steerable", "-steerable-base-url", "ftp://llm"}, nil, `invalid -steerable-base-url "ftp://llm": want an http or https URL`},
		{nil, []string{"WEATHER_URL", "wttr.in"}, `invalid WEATHER_URL "wttr.in": want an http or https URL`},
		{[]string{"-narrative-timeout-sec", "0"}, nil, `invalid -narrative-timeout-sec "0": want more than 0 seconds`},
		{nil, []string{"VOICE_THINKER_URL", " "}, `invalid VOICE_THINKER_URL " ": want an http or https URL`},
		{[]string{"-voice-thinker-timeout", "0"}, nil, `invalid -voice-thinker-timeout "0": want more than 0 seconds`},
		{[]string{"-sidecar-path", "v1/listen"}, nil, `invalid -sidecar-path "v1/listen": want a path starting with /`},
		{nil, []string{"STT_URL", "whisper.lan"}, `invalid STT_URL "whisper.lan": want an http or https URL`},
		{nil, []string{"SIDECAR_DEADLINE", "0"}, `invalid SIDECAR_DEADLINE "0": want more than 0 seconds`},
		{[]string{"-calendar-person-prefix-re", `^\[(?P<person>\w+)\]`}, nil, `invalid -calendar-person-prefix-re "^\\[(?P<person>\\w+)\\]": want a regular expression with named groups person and rest`},
		{nil, []string{"CALENDAR_PERSON_PREFIX_RE", "("}, `invalid CALENDAR_PERSON_PREFIX_RE "(": want a regular expression with named groups person and rest`},
		{nil, []string{"PERCEPTION_MAX_DEVICES", "0"}, `invalid PERCEPTION_MAX_DEVICES "0": want at least 1`},
		{[]string{"-perception-feed-max-clients", "-1"}, nil, `invalid -perception-feed-max-clients "-1": want at least 1`},
		{nil, []string{"SPEAKER_STICKY_SEC", "-1"}, `invalid SPEAKER_STICKY_SEC "-1": want 0 or more`},
		{[]string{"-speaker-ask-threshold", "NaN"}, nil, `invalid -speaker-ask-threshold "NaN": want a number`},
	} {
		_, err := parseConfig(tc.args, env(tc.env...))
		if err == nil {
			t.Errorf("%v %v: parseConfig succeeded", tc.args, tc.env)
			continue
		}
		if d := cmp.Diff(errorLines(err), []string{tc.want}); d != "" {
			t.Errorf("%v %v (-got +want):\n%s", tc.args, tc.env, d)
		}
	}
}
