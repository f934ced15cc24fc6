package tier1

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
)

// Budgets below the caller's timeouts (BRIDGE_TIMEOUT_SHORT 5 s, _LONG 30 s).
const (
	ShortBudget = 4500 * time.Millisecond
	LongBudget  = 28 * time.Second
	// ResultCap is the longest result, in code points (the caller keeps 1000).
	ResultCap = 1000
)

// Memory is the voice memory (memstore.Store).
type Memory interface {
	Search(ctx context.Context, query string, limit int) ([]memstore.Row, error)
	Enqueue(w memstore.Write) error
	EnqueuePerson(w memstore.PersonWrite) error
}

// People is the household's kid-safety gate (perception.Household): a
// fact about a person it does not know to be an adult is held for a
// grown-up's review. Nil holds every fact.
type People interface {
	NeedsReview(personID string) bool
}

// Vision gives the freshest camera description of any device (the vision
// package); nil means nothing is ever fresh.
type Vision interface {
	// Freshest returns the newest non-empty description and its age.
	Freshest() (desc string, age time.Duration, ok bool)
}

// Xiaozhi is what play_song needs from xiaozhi's admin API.
type Xiaozhi interface {
	Enabled() bool
	Songs(ctx context.Context) ([]string, error)
	PlayAsset(ctx context.Context, deviceID, asset string) (xiaozhi.Response, error)
}

// Config configures the routes.
type Config struct {
	Memory  Memory
	Vision  Vision
	Xiaozhi Xiaozhi
	// People decides which per-person facts wait for review; nil means
	// all of them do.
	People People
	// Thinker is think_hard's model endpoint.
	Thinker ThinkerConfig
	// SongAssetBase is VOICE_PLAY_SONG_ASSET_BASE, a directory on the xiaozhi host.
	SongAssetBase string
	// Metrics are tier1's series (NewMetrics); nil records nothing.
	Metrics *Metrics
	// Logger receives tool logs. Nil discards.
	Logger hclog.Logger
	// Clock ages the song catalogue; nil is the real clock.
	Clock clockwork.Clock

	shortBudget, longBudget time.Duration
}

// Handler serves the Tier1Slim routes.
type Handler struct {
	cfg     Config
	log     hclog.Logger
	thinker *thinker
	songs   *songCache
}

// New returns the handler.
func New(cfg Config) *Handler {
	if cfg.Memory == nil {
		panic("tier1: New needs Config.Memory")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.shortBudget <= 0 {
		cfg.shortBudget = ShortBudget
	}
	if cfg.longBudget <= 0 {
		cfg.longBudget = LongBudget
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.SongAssetBase == "" {
		cfg.SongAssetBase = DefaultConfig().SongAssetBase
	}
	return &Handler{cfg: cfg, log: cfg.Logger, thinker: newThinker(cfg.Thinker), songs: &songCache{clock: cfg.Clock}}
}

// DefaultConfig returns bridge.py's think_hard endpoint and song
// directory: the one place they are written.
func DefaultConfig() Config {
	return Config{Thinker: ThinkerConfig{URL: "http://localhost:8080/v1/chat/completions", Model: "qwen3.6:27b-think", Timeout: 30 * time.Second},
		SongAssetBase: "/opt/xiaozhi-esp32-server/config/assets/songs"}
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("Thinker.Timeout"): the one range
// check of each field; the bridge's command line names the variable a
// value came from. The memory is a dependency, not a setting: New panics
// without one.
func (c Config) Validate() error {
	return fieldcheck.Under("Thinker", c.Thinker.validate())
}

// Routes mounts the routes.
func (h *Handler) Routes(e *echo.Echo) {
	e.POST("/api/voice/escalate", h.escalate)
	e.POST("/api/voice/remember", h.remember)
	e.POST("/api/voice/memory_log", h.memoryLog)
	e.POST("/api/voice/remember_person", h.rememberPersonRoute)
}

// bindVoice binds a voice route's JSON body: read reads the route's own
// fields, then the optional session_id every voice route takes.
func bindVoice(c echo.Context, read func(b *httpapi.Binder)) (session string, hasSession bool, err error) {
	err = httpapi.BindFields(c.Request().Body, 0, func(b *httpapi.Binder) {
		read(b)
		session, hasSession = b.OptString("session_id")
	})
	return session, hasSession, err
}

// escalate is POST /api/voice/escalate.
func (h *Handler) escalate(c echo.Context) error {
	var tool string
	args := map[string]json.RawMessage{}
	session, _, err := bindVoice(c, func(b *httpapi.Binder) {
		tool = b.String("tool")
		b.ObjectOr("args", &args)
	})
	if err != nil {
		return err
	}
	start := time.Now() // a latency, on the real clock
	result := h.run(c.Request().Context(), tool, session, args)
	result = text.Truncate(result, text.Cut{Max: ResultCap})
	h.log.Info("escalation", "tool", tool, "session", session, "elapsed", time.Since(start))
	return httpapi.WriteJSON(c, http.StatusOK, map[string]string{"result": result})
}

// errBadArg is a tool argument of the wrong type: "(<tool> failed)".
var errBadArg = errors.New("argument is not a string")

// strArg reads a string argument the way bridge.py's args.get(name, "")
// did: absent is "", any other type (null included) fails the tool.
func strArg(args map[string]json.RawMessage, name string) (string, error) {
	raw, ok := args[name]
	if !ok {
		return "", nil
	}
	s, ok := httpapi.StringValue(raw)
	if !ok {
		return "", errBadArg
	}
	return s, nil
}

// run dispatches one tool within its budget.
func (h *Handler) run(ctx context.Context, tool, session string, args map[string]json.RawMessage) string {
	var result string
	var err error
	switch tool {
	case "memory_lookup":
		ctx, cancel := context.WithTimeout(ctx, h.cfg.shortBudget)
		defer cancel()
		result, err = h.memoryLookup(ctx, args)
	case "think_hard":
		ctx, cancel := context.WithTimeout(ctx, h.cfg.longBudget)
		defer cancel()
		result, err = h.thinkHard(ctx, args)
	case "take_photo":
		result = h.takePhoto()
	case "play_song":
		ctx, cancel := context.WithTimeout(ctx, h.cfg.shortBudget)
		defer cancel()
		result, err = h.playSong(ctx, args)
	case "remember_person":
		result, err = h.rememberPersonTool(args, session)
	default:
		return "(unknown tool: " + tool + ")"
	}
	if err != nil {
		h.log.Warn("tool failed", "tool", tool, "error", err)
		return "(" + tool + " failed)"
	}
	return result
}

// remember is POST /api/voice/remember: {"fact", "session_id"}.
func (h *Handler) remember(c echo.Context) error {
	var fact string
	session, hasSession, err := bindVoice(c, func(b *httpapi.Binder) { fact = b.String("fact") })
	if err != nil {
		return err
	}
	f := text.Truncate(text.Strip(fact), text.Cut{Max: 300})
	if f == "" {
		return c.NoContent(http.StatusNoContent)
	}
	return h.enqueue(c, memstore.Write{Content: f, Category: "core", Importance: 0.7, SessionID: session, HasSession: hasSession})
}

// memoryLog is POST /api/voice/memory_log: {"user", "assistant", "session_id"}.
func (h *Handler) memoryLog(c echo.Context) error {
	var user, assistant string
	session, hasSession, err := bindVoice(c, func(b *httpapi.Binder) { user, assistant = b.String("user"), b.String("assistant") })
	if err != nil {
		return err
	}
	u, a := text.Truncate(text.Strip(user), text.Cut{Max: 500}), text.Truncate(text.Strip(assistant), text.Cut{Max: 1000})
	if u == "" && a == "" {
		return c.NoContent(http.StatusNoContent)
	}
	content := text.Strip("user: " + u + " | assistant: " + a)
	return h.enqueue(c, memstore.Write{Content: content, Category: "conversation", Importance: 0.3, SessionID: session, HasSession: hasSession})
}

func (h *Handler) enqueue(c echo.Context, w memstore.Write) error {
	if err := h.cfg.Memory.Enqueue(w); err != nil {
		h.refused(w.Category, err)
		return notAccepted(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// notAccepted is the answer to a write the memory writer did not accept,
// saying what is wrong without a path: 507 when the disk is full, else
// 503. A journal that cannot take the write is "memory not writable"; a
// full queue is "memory database not writable" while brain.db refuses the
// rows waiting in it, "memory writer busy" while it is only locked.
func notAccepted(err error) error {
	cause, full := health.Cause(err)
	status := http.StatusServiceUnavailable
	if full {
		status = http.StatusInsufficientStorage
	}
	var what string
	switch {
	case errors.Is(err, memstore.ErrJournal):
		what = "memory not writable"
	case errors.Is(err, memstore.ErrDatabase):
		what = "memory database not writable"
	case errors.Is(err, memstore.ErrClosed):
		return httpapi.NewError(http.StatusServiceUnavailable, "memory writer stopping; write not accepted")
	default:
		return httpapi.NewError(http.StatusServiceUnavailable, "memory writer busy; write not accepted")
	}
	if cause != "" {
		what += ": " + cause
	}
	return httpapi.NewError(status, what+"; write not accepted")
}

// refused counts and logs a write the memory writer did not accept; a
// journal or database that cannot be written is the store's to log, once.
func (h *Handler) refused(category string, err error) {
	if h.cfg.Metrics != nil {
		h.cfg.Metrics.MemoryWritesDropped.Inc()
	}
	level := hclog.Warn
	if errors.Is(err, memstore.ErrJournal) || errors.Is(err, memstore.ErrDatabase) {
		level = hclog.Debug
	}
	h.log.Log(level, "memory write refused", "category", category, "error", err)
}
