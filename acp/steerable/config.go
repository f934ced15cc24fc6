package steerable

import (
	"net/url"
	"strings"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// DefaultCommand is how the sidecar is started when nothing else is
// configured (STEERABLE_CMD).
const DefaultCommand = "python3 -m steerable_sidecar"

// DefaultProvider is the provider agent.chat.stream names when none is
// configured: any OpenAI-compatible endpoint.
const DefaultProvider = "openai_compat"

// Config configures the steerable protocol: the LLM parameters sent with
// every agent.chat.stream and how the bridge keeps each session's history.
// Defaults are DefaultConfig's, filled field by field when left zero; the
// sidecar needs Model.
type Config struct {
	// Provider, Model and BaseURL are agent.chat.stream's provider, model
	// and baseUrl (STEERABLE_PROVIDER, STEERABLE_MODEL, STEERABLE_BASE_URL).
	// Provider defaults to "openai_compat". An empty Model or BaseURL is
	// left out: the sidecar then refuses every chat for want of a model
	// (the demo agent needs none), and uses https://api.openai.com/v1.
	Provider string
	Model    string
	BaseURL  string
	// APIKey is agent.chat.stream's apiKey (STEERABLE_API_KEY). It is a
	// Secret: formatting or marshalling it prints "[redacted]", and the
	// bridge never logs the frames that carry it.
	APIKey Secret
	// Temperature is agent.chat.stream's temperature; nil leaves it out.
	Temperature *float64

	// HistoryChars caps, in characters (code points), the messages sent
	// with one turn: the session's history plus the new prompt (24 000).
	// The oldest exchanges are dropped first, except the session's first,
	// which carries the prompt's full instructions and is kept while it
	// fits; the new prompt is always sent whole.
	HistoryChars int

	// PingInterval is how often system.ping refreshes the health snapshot
	// and checks that the sidecar still answers (10 s); PingTimeout bounds
	// one ping (5 s). After PingMisses (3) unanswered pings in a row the
	// sidecar is taken for hung and restarted.
	PingInterval time.Duration
	PingTimeout  time.Duration
	PingMisses   int

	// MaxLine bounds one line of the sidecar's stdout (8 MiB, the ACP
	// guard's bound); a longer line is discarded unread and counted.
	MaxLine int
	// MaxReply bounds the text one turn delivers (1 MiB, the turn
	// mailbox's size): past it, a flooding sidecar's chunks are dropped
	// and counted, so a turn's memory stays bounded however long it runs.
	MaxReply int
}

// Defaults of Config.
const (
	DefaultHistoryChars = 24_000
	DefaultPingInterval = 10 * time.Second
	DefaultPingTimeout  = 5 * time.Second
	DefaultPingMisses   = 3
	DefaultMaxLine      = 8 << 20
	DefaultMaxReply     = 1 << 20
)

// DefaultConfig returns the provider, the history cap, the ping rhythm and
// the line and reply bounds: the one place their defaults are written.
func DefaultConfig() Config {
	return Config{Provider: DefaultProvider, HistoryChars: DefaultHistoryChars, PingInterval: DefaultPingInterval,
		PingTimeout: DefaultPingTimeout, PingMisses: DefaultPingMisses, MaxLine: DefaultMaxLine, MaxReply: DefaultMaxReply}
}

// withDefaults fills each field left zero with its DefaultConfig value,
// field by field.
func (c Config) withDefaults() Config {
	fieldcheck.Fill(&c, DefaultConfig(), "Provider", "HistoryChars", "PingInterval", "PingTimeout", "PingMisses", "MaxLine", "MaxReply")
	return c
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("BaseURL"): the one range check of each field; the
// bridge's command line names the variable a value came from.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	u, err := url.Parse(c.BaseURL)
	errs.Check("BaseURL", c.BaseURL == "" || (err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""), c.BaseURL, "an http or https URL")
	if t := c.Temperature; t != nil {
		errs.Check("Temperature", *t >= 0 && *t <= 2, *t, "a number from 0 to 2")
	}
	errs.Check("HistoryChars", c.HistoryChars >= 0, c.HistoryChars, "0 or more")
	errs.CheckRef("PingTimeout", c.PingTimeout <= 0 || c.PingInterval <= 0 || c.PingTimeout <= c.PingInterval, c.PingTimeout, "at most", "PingInterval")
	return errs.Err()
}

// SplitCommand splits a command line such as STEERABLE_CMD ("python3 -m
// steerable_sidecar", the default when s is blank) into the executable and
// its arguments for acp.Config's Command and Args. Words are separated by
// white space; there is no quoting.
func SplitCommand(s string) (command string, args []string) {
	f := strings.Fields(s)
	if len(f) == 0 {
		f = strings.Fields(DefaultCommand)
	}
	return f[0], append([]string{}, f[1:]...)
}

// Secret is a string that never prints: formatting it with any verb, or
// marshalling it to JSON or text, gives "[redacted]". Convert it to a
// string to use it.
type Secret string

const redacted = "[redacted]"

// String implements fmt.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer (the %#v verb).
func (s Secret) GoString() string { return `steerable.Secret("` + s.String() + `")` }

// MarshalText implements encoding.TextMarshaler, which JSON uses too.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
