// Package social is the robot's inner and social life, three perception
// consumers and the journal card they fill:
//
//   - the sleep dreamer: when a robot goes to sleep it dreams a few times
//     through the night (the narrative model writes each dream from a
//     literary seed), into dreams-YYYY-MM-DD.ndjson;
//   - the dance reflector: after a dance the robot privately reflects on
//     it, into dances-YYYY-MM-DD.ndjson;
//   - the proactive greeter: a recognised household member is greeted by
//     name, a few times a day at most, with a greeting the voice agent
//     writes (in the greeter's one session) from the time of day, the
//     person's roster entry and calendar; a face not on the roster gets a
//     fixed greeting, no agent turn; it is spoken with xiaozhi's say and
//     logged to the conversation log;
//   - GET /api/journal/today: today's dreams, dance reflections and
//     greetings for the dashboard.
//
// # Concurrency
//
// New subscribes the enabled consumers to the perception bus at once (so
// no event published after New is missed); Run reads them, one goroutine
// each, until its ctx ends. The model and robot calls never run on those
// goroutines: each is a task with the Run ctx, bounded in number (extra
// ones are dropped with a log line, never queued), and Run returns only
// after every task has. Dream timers run on the injected clock, are kept
// only for devices still in perception's device table, and are all
// stopped when Run ends. A panic in a handler or task is logged and the
// consumer goes on.
package social

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// Perception is what the consumers need from the perception service
// (*perception.Service): its bus, its device table (a device gone from it
// is forgotten here too) and the household roster.
type Perception interface {
	Bus() *perception.Bus
	States() *perception.States
	Household() *perception.Household
}

// Robot speaks through xiaozhi's admin API (*xiaozhi.Client).
type Robot interface {
	Enabled() bool
	Say(ctx context.Context, deviceID, text string) error
}

// Agent is the voice agent, asked for a greeting as a turn of its own on
// sessionKey (SessionKey), so that it never disturbs a conversation in
// progress; the bridge's also never closes a conversation's session to
// make room for it.
type Agent interface {
	Prompt(ctx context.Context, sessionKey, prompt string) (string, error)
}

// Calendar gives today's calendar lines for a person (bridge/periphery),
// with the household's when includeHousehold. Each line is already safe
// for a prompt line (the periphery's funnel runs prompttext.Line).
type Calendar interface {
	Today(person string, includeHousehold bool) []string
}

// Narrator is the narrative model (*llm.Narrative): it returns the text,
// or an error when there is none (already logged by the client).
type Narrator interface {
	Complete(ctx context.Context, system, user string, maxTokens int, temperature float64) (string, error)
}

// ConvoLog is the conversation log (*convolog.Log); greetings are written
// to it as turns of channel "greeter".
type ConvoLog interface {
	Write(r convolog.Record)
}

// Settings are the consumers' settings with bridge.py's names and
// defaults (DefaultSettings, the one place they are written). Start from
// DefaultSettings and change the fields you need: every field is taken as
// set (a DreamCount of 0 means no dreams, a false switch is off), but
// GreetAgentTimeout, MaxGreetIdentities and QueueSize, whose zero means
// their default.
type Settings struct {
	DreamerEnabled bool          // DREAMER_ENABLED, on only for exactly "1"
	DreamWindow    time.Duration // DREAM_WINDOW_SECONDS: the night the dreams are spread over
	DreamCount     int           // DREAM_COUNT_PER_NIGHT

	DanceReflectorEnabled bool // DANCE_REFLECTOR_ENABLED, on only for exactly "1"

	GreeterEnabled     bool          // GREETER_ENABLED, truthy 1/true/yes/on
	GreetOnFaceSeen    bool          // GREETER_USE_FACE_DETECTED: a bare face_detected counts as an unknown face
	GreetUnknown       bool          // GREETER_GREET_UNKNOWN
	GreetAnyone        bool          // GREETER_GREET_ANYONE: bridge.py's agent greeting for any name, not only household members
	GreetCooldown      time.Duration // GREETER_COOLDOWN_HOURS, between greetings of one person (not before the first)
	GreetPerDayMax     int           // GREETER_PER_DAY_MAX, greetings of one person per local day
	GreetMaxWords      int           // GREETER_GREETING_MAX_WORDS, asked of the agent
	GreeterStatePath   string        // GREETER_STATE_PATH, used as given (the bridge expands its "~"); "" keeps the counts in memory only
	GreetAgentTimeout  time.Duration // the agent's time for a greeting (90 s, ZEROCLAW_TIMEOUT's default)
	MaxGreetIdentities int           // with GreetAnyone, names not on the roster counted per day (64); past it a new one is not greeted that day

	// QueueSize is each consumer's bus queue (perception.ConsumerQueue when 0).
	QueueSize int
}

// DefaultSettings returns bridge.py's defaults, with the greeting counts
// in memory only (bridge.py's file is under the home directory, which the
// bridge's configuration resolves).
func DefaultSettings() Settings {
	return Settings{
		DreamerEnabled: true, DreamWindow: 28800 * time.Second, DreamCount: 3,
		DanceReflectorEnabled: true,
		GreeterEnabled:        true, GreetCooldown: 4 * time.Hour, GreetPerDayMax: 3, GreetMaxWords: 15,
		GreetAgentTimeout: 90 * time.Second, MaxGreetIdentities: 64,
	}
}

// Config configures the service.
type Config struct {
	// Perception is the perception service; nil subscribes nothing (only
	// the journal route works).
	Perception Perception
	// Robot speaks the greetings; nil (or disabled) logs them as failed.
	Robot Robot
	// Agent writes the greetings; nil uses the template greeting.
	Agent Agent
	// Calendar gives the greeting's calendar lines; nil gives none.
	Calendar Calendar
	// KidMode is read at each greeting; nil counts as kid mode on.
	KidMode func() bool
	// Narrator writes dreams and dance reflections; nil writes none.
	Narrator Narrator
	// ConvoLog receives one record per greeting; nil writes none.
	ConvoLog ConvoLog
	// JournalDir is CONVO_LOG_DIR: the dreams and dances files are written
	// there, and today's files (and the conversation log's greetings) are
	// read back at start for the journal card; "" writes and reads none.
	JournalDir string
	// JournalMetrics counts records the journal files lost; nil counts nothing.
	JournalMetrics *convolog.Metrics
	// Health is the conditions set the journal files and the greeter's
	// state file mark while they cannot be written (GET /health); nil
	// keeps a private set.
	Health *health.Conditions
	// Location is TZ: file dates, timestamps, the local day and the
	// greeting's time of day. Nil is time.Local.
	Location *time.Location
	// Clock is the time source; nil is the real clock.
	Clock clockwork.Clock
	// Logger is the parent logger (the consumers are named under it).
	Logger hclog.Logger
	// Access guards the routes that show the household (the journal): the
	// Host must name this machine, and the dashboard's credentials are
	// asked for when set. Nil: this machine's names, no credentials.
	Access *httpapi.Access
	// Settings are the consumers' settings.
	Settings Settings
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field (under "Settings."): the one range
// check of each field; the bridge's command line names the variable a
// value came from.
func (c Config) Validate() error { return fieldcheck.Under("Settings", c.Settings.Validate()) }

// Validate reports every field outside its range: a night of 0 or less,
// a dream count outside 0 to maxDreamCount, a per-day cap or word limit
// below 1, negative cooldowns, timeouts and bounds.
func (s Settings) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("DreamWindow", s.DreamWindow > 0, s.DreamWindow, "more than 0")
	errs.Check("DreamCount", s.DreamCount >= 0 && s.DreamCount <= maxDreamCount, s.DreamCount, fmt.Sprintf("0 to %d", maxDreamCount))
	errs.Check("GreetPerDayMax", s.GreetPerDayMax >= 1, s.GreetPerDayMax, "at least 1")
	errs.Check("GreetMaxWords", s.GreetMaxWords >= 1, s.GreetMaxWords, "at least 1")
	errs.Check("GreetCooldown", s.GreetCooldown >= 0, s.GreetCooldown, "0 or more")
	// 0 is the default for these.
	errs.Check("GreetAgentTimeout", s.GreetAgentTimeout >= 0, s.GreetAgentTimeout, "0 or more")
	errs.Check("MaxGreetIdentities", s.MaxGreetIdentities >= 0, s.MaxGreetIdentities, "0 or more")
	errs.Check("QueueSize", s.QueueSize >= 0, s.QueueSize, "0 or more")
	return errs.Err()
}

// maxDreamCount bounds the timers one sleeping robot holds.
const maxDreamCount = 100

// Consumer names, the label values of dotty_perception_dropped_total and
// the loggers' names.
const (
	SleepDreamer     = "sleep_dreamer"
	DanceReflector   = "dance_reflector"
	ProactiveGreeter = "proactive_greeter"
)

// consumerRow is one of the social consumers: adding one is its own file
// (its name, its handler) and a row of consumerTable.
type consumerRow struct {
	name     string
	triggers func(Settings) []string // the events it is given
	enabled  func(Settings) bool     // its setting
	handler  func(*Service) perception.Handler
	started  string // logged when Run starts it
}

// running is an enabled consumer.
type running struct {
	*perception.Consumer
	log     hclog.Logger
	started string
}

// consumerTable is every social consumer, subscribed in this order.
var consumerTable = []consumerRow{
	{SleepDreamer, func(Settings) []string { return []string{"state_changed"} },
		func(s Settings) bool { return s.DreamerEnabled },
		func(s *Service) perception.Handler { return s.onStateChanged }, "sleep dreamer started"},
	{DanceReflector, func(Settings) []string { return []string{"dance_ended"} },
		func(s Settings) bool { return s.DanceReflectorEnabled },
		func(s *Service) perception.Handler { return s.onDanceEnded }, "dance reflector started"},
	{ProactiveGreeter, func(s Settings) []string {
		if s.GreetOnFaceSeen {
			return []string{"face_recognized", "face_detected"}
		}
		return []string{"face_recognized"}
	}, func(s Settings) bool { return s.GreeterEnabled },
		func(s *Service) perception.Handler { return s.onFace }, "proactive greeter started"},
}

// Bounds on tasks in flight; past them a task is dropped with a log line.
const (
	maxReflections = 4 // dance reflections at once
	maxGreetings   = 4 // greetings at once (one per device)
)

// Service runs the consumers and serves the journal card.
type Service struct {
	cfg   Config
	set   Settings
	log   hclog.Logger
	clock clockwork.Clock
	loc   *time.Location

	consumers []running // the enabled consumers

	// taskMu orders task starts with shutdown: no task starts once
	// stopped is set, so Run's tasks.Wait never races an Add.
	taskMu  sync.Mutex
	stopped bool
	tasks   sync.WaitGroup

	dreams   *dreamer
	greeter  *greeter
	dancesIn chan struct{} // dance reflection slots

	journal              *journal
	dreamFile, danceFile *convolog.Daily
	dreamLog, danceLog   hclog.Logger
	greetLog, journalLog hclog.Logger
	journalReadWarned    bool // loadJournal has warned once (New's goroutine only)
}

// New builds the service: it loads the greeter's counts and today's
// journal, and subscribes the enabled consumers.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Access == nil {
		cfg.Access = httpapi.NewAccess(httpapi.AccessConfig{Logger: cfg.Logger})
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	set := cfg.Settings
	def := DefaultSettings()
	if set.GreetAgentTimeout <= 0 {
		set.GreetAgentTimeout = def.GreetAgentTimeout
	}
	if set.MaxGreetIdentities <= 0 {
		set.MaxGreetIdentities = def.MaxGreetIdentities
	}
	set.DreamCount = min(max(set.DreamCount, 0), maxDreamCount)
	s := &Service{cfg: cfg, set: set, log: cfg.Logger, clock: cfg.Clock, loc: cfg.Location,
		dancesIn: make(chan struct{}, maxReflections)}
	s.dreamLog = s.log.Named(SleepDreamer)
	s.danceLog = s.log.Named(DanceReflector)
	s.greetLog = s.log.Named(ProactiveGreeter)
	s.journalLog = s.log.Named("journal")
	if cfg.JournalDir != "" {
		mk := func(prefix, what string) *convolog.Daily {
			return convolog.NewDaily(convolog.DailyConfig{Dir: cfg.JournalDir, Prefix: prefix, Location: cfg.Location,
				Logger: s.journalLog, Failures: cfg.JournalMetrics.Failures(prefix), What: what, Health: cfg.Health})
		}
		s.dreamFile = mk(dreamsPrefix, "the dreams log")
		s.danceFile = mk(dancesPrefix, "the dance reflections log")
	}
	s.journal = newJournal(s.clock, s.loc)
	s.loadJournal()
	s.dreams = newDreamer()
	s.greeter = newGreeter(s)
	if p := cfg.Perception; p != nil {
		for _, row := range consumerTable {
			if !row.enabled(set) {
				continue
			}
			log := s.log.Named(row.name)
			s.consumers = append(s.consumers, running{p.Bus().SubscribeFunc(row.name, set.QueueSize, row.triggers(set), log, row.handler(s)), log, row.started})
		}
	}
	return s
}

// Routes mounts GET /api/journal/today behind Access.Private.
func (s *Service) Routes(e *echo.Echo) {
	e.GET("/api/journal/today", s.getToday, s.cfg.Access.Private)
}

// Run reads the enabled consumers' events until ctx ends, then stops the
// dream timers and waits for every task in flight (they see ctx end).
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range s.consumers {
		c.log.Info(c.started)
		wg.Go(func() { c.Run(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
	s.taskMu.Lock()
	s.stopped = true
	s.taskMu.Unlock()
	s.dreams.stopAll()
	s.tasks.Wait()
	return nil
}

// spawn runs fn as a task with ctx (Run's), unless Run is over; it
// reports whether the task started.
func (s *Service) spawn(ctx context.Context, log hclog.Logger, name string, fn func(ctx context.Context)) bool {
	s.taskMu.Lock()
	if s.stopped || ctx.Err() != nil {
		s.taskMu.Unlock()
		return false
	}
	s.tasks.Add(1)
	s.taskMu.Unlock()
	go func() {
		defer s.tasks.Done()
		perception.Safely(log, name, func() { fn(ctx) })
	}()
	return true
}

// known reports whether device is still in perception's device table.
func (s *Service) known(device string) bool {
	if s.cfg.Perception == nil {
		return false
	}
	_, ok := s.cfg.Perception.States().Get(device)
	return ok
}
