package robottools

import (
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1"
)

// Config configures the tools and their server.
type Config struct {
	// Robot is xiaozhi's admin API (*xiaozhi.Client); nil makes every tool
	// that acts on the robot fail with a readable error.
	Robot Robot
	// Voice is the Tier1Slim tools' logic (*tier1.Handler): memory search,
	// the song catalogue and the kid-safety review gate. Nil fails the tools
	// that need it.
	Voice Voice
	// Vision gives the freshest camera description; nil: never fresh.
	Vision tier1.Vision
	// Room says who is in a robot's room; nil fails who_is_here.
	Room Room
	// Calendar gives today's events; nil fails today.
	Calendar Calendar
	// Permissions is the agent's permission policy (*agentconn.Policy);
	// every call is decided by it under the tool's name. Nil allows all.
	Permissions agentconn.Permissioner
	// KidMode reports kid mode, read at every call; nil is off.
	KidMode func() bool
	// MaxTokens bounds the token table; minting past it revokes the
	// oldest token.
	MaxTokens int
	// MaxKeys bounds the pool keys whose robot is remembered; setting a
	// new key past it forgets the least recently set.
	MaxKeys int
	// MoodTTL is how long a mood set_mood records waits for the reply it
	// leads (TakeMood); an older one is dropped.
	MoodTTL time.Duration
	// CallsPerMinute is each token's sustained call rate.
	CallsPerMinute int
	// Burst is how many calls a token may make at once.
	Burst int
	// RateWait is the longest a call past its token's rate waits for its
	// turn (first come, first served, within the request's deadline);
	// one that would wait longer is refused at once.
	RateWait time.Duration
	// PhotoWait is how long take_photo waits for the description of the
	// photo it asked for before it answers with the freshest one.
	PhotoWait time.Duration
	// Access is the bridge's rule for requests a web page could send (the
	// machine's names); nil: this machine's names and addresses.
	Access *httpapi.Access
	// Registry receives dotty_mcp_tool_calls_total; nil records nothing.
	Registry *prometheus.Registry
	// Logger receives the tools' logs. Nil discards.
	Logger hclog.Logger
	// Clock paces the rate limit and the photo wait and stamps moods; nil
	// is the real clock.
	Clock clockwork.Clock
}

// maxMoodTTL bounds MoodTTL: a mood is for the reply being formed, not
// for a later conversation.
const maxMoodTTL = 10 * time.Minute

// DefaultConfig returns the bounds: the one place they are written.
func DefaultConfig() Config {
	return Config{MaxTokens: 256, MaxKeys: 256, MoodTTL: 2 * time.Minute, CallsPerMinute: 30, Burst: 10, RateWait: 5 * time.Second,
		PhotoWait: 10 * time.Second}
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("CallsPerMinute").
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("MaxTokens", c.MaxTokens >= 1, c.MaxTokens, "at least 1")
	errs.Check("MaxKeys", c.MaxKeys >= 1, c.MaxKeys, "at least 1")
	errs.Check("MoodTTL", c.MoodTTL > 0 && c.MoodTTL <= maxMoodTTL, c.MoodTTL, "more than 0 and at most "+maxMoodTTL.String())
	errs.Check("CallsPerMinute", c.CallsPerMinute >= 1, c.CallsPerMinute, "at least 1")
	errs.Check("Burst", c.Burst >= 1, c.Burst, "at least 1")
	errs.Check("RateWait", c.RateWait >= 0 && c.RateWait <= time.Minute, c.RateWait, "between 0 and 1m0s")
	errs.Check("PhotoWait", c.PhotoWait > 0 && c.PhotoWait <= tier1.PhotoFreshness, c.PhotoWait,
		"more than 0 and at most "+tier1.PhotoFreshness.String())
	return errs.Err()
}
