// Package voice is the voice feature: POST /api/message and
// /api/message/stream, which xiaozhi's ZeroClawLLM provider calls, and
// Reply for the firmware sidecar. A turn gets the prompt sandwich
// (speaker, person memory, room view, perception, context, suffix), runs
// on the agent pool, goes through the reply pipeline (emoji, content
// filter, sentence cap) and is recorded in the voice metrics, the
// conversation log and the turn bus.
package voice

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
)

// The three voice fallback replies, bridge.py's, spoken verbatim.
const (
	FallbackTimeout = "😐 I'm thinking too slowly right now, try again."
	FallbackOffline = "😐 My AI brain is offline."
	FallbackError   = "😐 Something went wrong, please try again."
)

// Error kinds of dotty_request_errors_total and the conversation log.
const (
	KindTimeout       = "timeout"
	KindBinaryMissing = "binary_missing"
	KindException     = "exception"
	// KindAgentUnavailable: the agent failed and is not back yet.
	KindAgentUnavailable = "agent_unavailable"
	// The failures an agent reports by class (agentconn.AgentError, the
	// steerable sidecar's failure classes), each under its own label.
	KindBudgetExhausted = agentconn.KindBudgetExhausted
	KindPolicyDenied    = agentconn.KindPolicyDenied
	KindToolDispatch    = agentconn.KindToolDispatch
	KindStorage         = agentconn.KindStorage
	KindTransport       = agentconn.KindTransport
	// KindShutdown: the bridge stopped and the turn had not finished
	// within the shutdown grace.
	KindShutdown = "shutdown"
)

// errorKinds are the kind labels created at zero for each voice endpoint.
var errorKinds = []string{KindTimeout, KindBinaryMissing, KindException, KindAgentUnavailable,
	KindBudgetExhausted, KindPolicyDenied, KindToolDispatch, KindStorage, KindTransport, KindShutdown}

// Endpoint labels of the voice routes.
const (
	endpointMessage = "message"
	endpointStream  = "message_stream"
)

// voiceEndpoints are the endpoint labels created at zero.
var voiceEndpoints = []string{endpointMessage, endpointStream}

// NDJSONContentType is the stream's content type: no charset, so the
// Python client splits lines on \n and \r only.
const NDJSONContentType = "application/x-ndjson"

// Turner runs agent turns (acp.Pool). A streamed turn's chunks reach the
// wire when the Turner calls req.Flush after handing over the chunks that
// arrived together, or with the final frame; acp.Pool does both.
type Turner interface {
	Turn(ctx context.Context, req acp.TurnRequest) (acp.TurnResult, error)
}

// KidModer reports kid mode live (admin.Modes).
type KidModer interface{ KidMode() bool }

// PerceptionReader gives the perception lines for a device's prompt (the
// perception package); none yet means no block.
type PerceptionReader interface {
	PerceptionLines(deviceID string) []string
}

// ContextReader gives the context line's parts after the date: weather,
// today's calendar (bridge/periphery). It must not block.
type ContextReader interface{ ContextParts() []string }

// Speaker names who is talking to the robot (perception's Service): the
// prompt's "[Speaking with] …\n" line for a request's text, channel,
// device and room-view roster match, and the person's id; both "" when
// nobody was resolved. It does no I/O and never fails a turn.
type Speaker interface {
	SpeakerBlock(text, channel, deviceID, roomMatchPersonID string) (block, personID string)
}

// PersonMemory gives what the robot remembers about a person (tier1's
// memory store): "[Person memory]\n- fact\n…" or "" when nothing is kept.
// It must return soon after ctx ends: the turn stops waiting then, but the
// call runs on until it returns.
type PersonMemory interface {
	PersonBlock(ctx context.Context, personID string) string
}

// Robot is the robot's MCP tools as a conversation's turns meet them
// (*robottools.Server, through the pool's key), key being the turn's
// acp.TurnRequest.Key: SetDevice(key, deviceID) at the start of every turn
// that names its robot, and TakeMood(key) when the reply's lead emoji is
// formed, which returns (and clears) the allowed emoji of the face's mood
// the agent set for the reply, if any. Neither may block.
type Robot interface {
	SetDevice(key, deviceID string)
	TakeMood(key string) (emoji string, ok bool)
}

// Config configures the voice routes.
type Config struct {
	// Agent runs the turns.
	Agent Turner
	// Timeout is ZEROCLAW_TIMEOUT: the whole turn, session wait included (90 s).
	Timeout time.Duration
	// Heartbeat is the idle time after which the stream writes a bare
	// newline to keep the caller's read timer alive (15 s).
	Heartbeat time.Duration
	// MaxSentences is MAX_SENTENCES (6).
	MaxSentences int
	// Location is TZ, for the context date (default time.Local).
	Location *time.Location
	// KidMode selects the kid suffix; nil means off.
	KidMode KidModer
	// Perception and Context feed the sandwich; nil means none.
	Perception PerceptionReader
	Context    ContextReader
	// Speaker resolves who is talking, once per turn, before the session
	// is leased; nil means no speaker line and no person memory.
	Speaker Speaker
	// PersonMemory gives the resolved person's memory block; nil means
	// none.
	PersonMemory PersonMemory
	// Robot is told each turn's robot (metadata.device_id) and gives the
	// mood that leads its reply; nil: neither.
	Robot Robot
	// PersonMemoryWait caps the wait for PersonMemory (500 ms): a busy
	// memory store must never hold a voice turn up noticeably, and a turn
	// goes on without the block when it does not answer in time.
	PersonMemoryWait time.Duration
	// ConvoLog receives one record per completed turn; nil writes none.
	ConvoLog *convolog.Log
	// Turns receives completed turns for the dashboard; nil publishes none.
	Turns *turnbus.Bus
	// Metrics receives the dotty_* voice series; nil records nothing.
	Metrics *Metrics
	// Logger receives turn logs. Nil discards.
	Logger hclog.Logger
	// MaxBodyBytes bounds a request body (1 MiB).
	MaxBodyBytes int64
	// MaxContentRunes bounds content in code points (16 384), the unit of
	// every length limit of the API: a spoken turn is a few hundred, and
	// everything longer is sent to the model, logged and shown on the
	// dashboard.
	MaxContentRunes int

	// Stopping is the server's Stopping channel: once it is closed both
	// routes answer 503 instead of starting a turn. Nil never refuses.
	Stopping <-chan struct{}

	// Clock dates the prompt and the turn records and times the stream's
	// heartbeat; nil is the real clock. Latencies are measured on the
	// real clock whatever it is: they are metrics of this machine.
	Clock clockwork.Clock
}

// DefaultMaxContentRunes is the default Config.MaxContentRunes.
const DefaultMaxContentRunes = 16 << 10

// DefaultPersonMemoryWait is the default Config.PersonMemoryWait.
const DefaultPersonMemoryWait = 500 * time.Millisecond

// MaxIDRunes bounds channel and session_id in code points: real callers
// send a word and a UUID, and both are kept with every turn (the session
// pool's key, the conversation log, the dashboard).
const MaxIDRunes = 256

// DefaultConfig returns the voice routes' bounds (bridge.py's turn
// timeout and sentence cap among them): the one place their defaults are
// written.
func DefaultConfig() Config {
	return Config{Timeout: 90 * time.Second, Heartbeat: 15 * time.Second, MaxSentences: 6,
		PersonMemoryWait: DefaultPersonMemoryWait, MaxBodyBytes: 1 << 20, MaxContentRunes: DefaultMaxContentRunes}
}

// withDefaults fills each bound left zero with its DefaultConfig
// value, field by field, and the missing zone (time.Local), logger and
// clock.
func (c Config) withDefaults() Config {
	fieldcheck.Fill(&c, DefaultConfig(), "Timeout", "Heartbeat", "MaxSentences", "PersonMemoryWait", "MaxBodyBytes", "MaxContentRunes")
	c.Location, c.Logger, c.Clock = cmp.Or(c.Location, time.Local), cmp.Or(c.Logger, hclog.NewNullLogger()), cmp.Or(c.Clock, clockwork.NewRealClock())
	return c
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("Timeout"): the one range check of each field; the
// bridge's command line names the variable a value came from. The agent
// is a dependency, not a setting: New panics without one.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("Timeout", c.Timeout > 0, c.Timeout, "more than 0")
	errs.Check("MaxSentences", c.MaxSentences >= 1, c.MaxSentences, "at least 1")
	return errs.Err()
}

// Voice serves POST /api/message and /api/message/stream for xiaozhi's
// ZeroClawLLM provider.
type Voice struct {
	cfg      Config
	log      hclog.Logger
	pipeline emoji.Pipeline
}

// New returns the voice handlers.
func New(cfg Config) *Voice {
	if cfg.Agent == nil {
		panic("voice: New needs Config.Agent")
	}
	cfg = cfg.withDefaults()
	v := &Voice{cfg: cfg, log: cfg.Logger}
	v.pipeline = emoji.Pipeline{MaxSentences: cfg.MaxSentences, OnHit: v.filterHit}
	return v
}

// Routes mounts the voice routes.
func (v *Voice) Routes(e *echo.Echo) {
	e.POST("/api/message", v.message)
	e.POST("/api/message/stream", v.stream)
}

func (v *Voice) kidMode() bool { return v.cfg.KidMode != nil && v.cfg.KidMode.KidMode() }

// filterHit counts and logs a content-filter hit.
func (v *Voice) filterHit(h emoji.Hit) {
	if m := v.cfg.Metrics; m != nil {
		m.ContentFilterHits.WithLabelValues(string(h.Tier)).Inc()
	}
	lvl := hclog.Warn
	if h.Tier == emoji.TierAlert {
		lvl = hclog.Error
	}
	v.log.Log(lvl, "content filter hit", "tier", h.Tier, "word", h.Word, "pos", h.Pos, "len", h.Len)
}

// voiceRequest is a validated voice request body.
type voiceRequest struct {
	content   string
	channel   string
	sessionID string
	deviceID  string
	roomView  string
	roomMatch string // metadata.room_match_person_id

	// Resolved once per request by prepare.
	speaker      string // the speaker line
	personMemory string // the person-memory block
}

func (r voiceRequest) prompt() promptInput {
	return promptInput{channel: r.channel, content: r.content, roomView: r.roomView, deviceID: r.deviceID,
		speaker: r.speaker, personMemory: r.personMemory}
}

// prepare resolves the speaker and reads their memory, once per request
// and before the session is leased (a retry on a new session reuses
// them). Only the sandwich channels get either. The memory read waits at
// most PersonMemoryWait and ends with ctx; an answer after that is
// dropped.
func (v *Voice) prepare(ctx context.Context, r *voiceRequest) {
	if v.cfg.Speaker == nil || !sandwichChannel(r.channel) {
		return
	}
	block, person := v.speaker(r)
	if person == "" || block == "" {
		return
	}
	r.speaker = block
	if v.cfg.PersonMemory == nil {
		return
	}
	r.personMemory = v.personMemory(ctx, person, r.sessionID)
}

// speaker asks Speaker; a panic there costs the turn only its line.
func (v *Voice) speaker(r *voiceRequest) (block, person string) {
	defer func() {
		if p := recover(); p != nil {
			v.log.Error("resolving the speaker panicked; the turn goes on without it", "session", r.sessionID, "panic", fmt.Sprint(p))
			block, person = "", ""
		}
	}()
	return v.cfg.Speaker.SpeakerBlock(r.content, r.channel, r.deviceID, r.roomMatch)
}

// personMemory runs PersonBlock on its own goroutine so an implementation
// that ignores ctx still cannot hold the turn past the cap; that goroutine
// ends when PersonBlock returns, its answer discarded.
func (v *Voice) personMemory(ctx context.Context, person, session string) string {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.PersonMemoryWait)
	defer cancel()
	got := make(chan string, 1) // never blocks the reader's send
	go func() {
		defer func() {
			if p := recover(); p != nil {
				v.log.Error("reading person memory panicked; the turn goes on without it", "person", person, "panic", fmt.Sprint(p))
				got <- ""
			}
		}()
		got <- v.cfg.PersonMemory.PersonBlock(ctx, person)
	}()
	select {
	case b := <-got:
		if b != "" && !strings.HasSuffix(b, "\n") {
			b += "\n"
		}
		return b
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			v.log.Warn("person memory not read in time; the turn goes on without it", "person", person,
				"session", session, "wait", v.cfg.PersonMemoryWait)
		}
		return ""
	}
}

// bind reads and validates the body with FastAPI's rules: content is a
// required string; channel and session_id are strings or null; metadata is
// an object or null; unknown fields are ignored.
func (v *Voice) bind(c echo.Context) (voiceRequest, error) {
	b, err := httpapi.Bind(c.Request().Body, v.cfg.MaxBodyBytes)
	if err != nil {
		return voiceRequest{}, err
	}
	var r voiceRequest
	r.content = b.String("content")
	r.channel, _ = b.OptString("channel")
	b.MaxRunes("channel", r.channel, MaxIDRunes)
	r.sessionID, _ = b.OptString("session_id")
	b.MaxRunes("session_id", r.sessionID, MaxIDRunes)
	var meta map[string]json.RawMessage
	if b.OptObject("metadata", &meta) {
		// Non-string values are ignored rather than failing the turn.
		r.deviceID, _ = httpapi.StringValue(meta["device_id"])
		r.roomView, _ = httpapi.StringValue(meta["room_description"])
		r.roomMatch, _ = httpapi.StringValue(meta["room_match_person_id"])
	}
	if err := b.Err(); err != nil {
		return voiceRequest{}, err
	}
	// Counting code points needs a pass over the content; the byte length
	// decides first whenever it can (a rune is 1 to 4 bytes).
	if n := len(r.content); n > v.cfg.MaxContentRunes &&
		(n > 4*v.cfg.MaxContentRunes || utf8.RuneCountInString(r.content) > v.cfg.MaxContentRunes) {
		return voiceRequest{}, httpapi.NewError(http.StatusRequestEntityTooLarge,
			fmt.Sprintf("content over %d characters", v.cfg.MaxContentRunes))
	}
	if r.sessionID == "" {
		r.sessionID = uuid.NewString()
	}
	return r, nil
}

// classify maps a failed turn to its kind and spoken fallback. Timeouts,
// and turns the shutdown grace ended (the bridge is going offline), are
// decided by the turn's own ctx, never by the error's text.
func classify(ctx context.Context, err error) (kind, fallback string) {
	var agentErr *agentconn.AgentError
	switch {
	case httpapi.ShuttingDown(ctx):
		return KindShutdown, FallbackOffline
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return KindTimeout, FallbackTimeout
	case errors.Is(err, acp.ErrBinaryMissing):
		return KindBinaryMissing, FallbackOffline
	case errors.Is(err, acp.ErrAgentUnavailable):
		return KindAgentUnavailable, FallbackOffline
	case errors.As(err, &agentErr):
		return classifyAgentError(agentErr.Kind)
	default:
		return KindException, FallbackError
	}
}

// classifyAgentError maps a failure the agent reported by class. An
// exhausted budget and an unreachable model provider fail every turn until
// an operator or the provider acts, so the robot says its brain is
// offline, as for a missing agent; the others concern this turn (a denied
// request, a failed tool, a storage hiccup), so it says something went
// wrong and to try again. Kinds the bridge does not know count as
// exceptions, which keeps the label set fixed.
func classifyAgentError(kind string) (string, string) {
	switch kind {
	case KindBudgetExhausted, KindTransport:
		return kind, FallbackOffline
	case KindPolicyDenied, KindToolDispatch, KindStorage:
		return kind, FallbackError
	default:
		return KindException, FallbackError
	}
}

// turnOutcome is what a finished turn reports to metrics and the logs.
type turnOutcome struct {
	endpoint string
	req      voiceRequest
	text     string
	kind     string // "" on success
	elapsed  time.Duration
	phases   *acp.Phases
}

// record writes metrics, the conversation log and the turn bus for a
// completed (not cancelled) turn.
func (v *Voice) record(o turnOutcome) {
	if m := v.cfg.Metrics; m != nil {
		m.RequestDuration.WithLabelValues(o.endpoint).Observe(o.elapsed.Seconds())
		if o.kind != "" {
			m.RequestErrors.WithLabelValues(o.endpoint, o.kind).Inc()
		}
	}
	used, _ := emoji.Leading(o.text)
	now := v.cfg.Clock.Now()
	var phases *convolog.Phases
	if o.phases != nil && o.kind == "" {
		phases = &convolog.Phases{Total: o.phases.Total, NewSession: o.phases.NewSession,
			Prompt: o.phases.Prompt, Reused: o.phases.Reused}
	}
	if v.cfg.ConvoLog != nil {
		v.cfg.ConvoLog.Write(convolog.Record{TS: now, Type: "chat", Channel: o.req.channel, SessionID: o.req.sessionID,
			RequestText: o.req.content, ResponseText: o.text, EmojiUsed: used, Latency: o.elapsed, Error: o.kind, Phases: phases})
	}
	if v.cfg.Turns != nil {
		v.cfg.Turns.Publish(turnbus.Turn{TS: now, Channel: o.req.channel, SessionID: o.req.sessionID,
			RequestText: text.Truncate(o.req.content, convolog.TextCut), ResponseText: text.Truncate(o.text, convolog.TextCut), EmojiUsed: used, Emotion: emoji.XiaozhiEmotion(o.text),
			Latency: o.elapsed, Error: o.kind, Phases: phases})
	}
}

func (v *Voice) observeFirstAudio(d time.Duration) {
	if m := v.cfg.Metrics; m != nil && d >= 0 {
		m.FirstAudioLatency.Observe(d.Seconds())
	}
}

// messageReply is /api/message's body; key order is bridge.py's plus emotion.
type messageReply struct {
	Response  string `json:"response"`
	SessionID string `json:"session_id"`
	Emotion   string `json:"emotion"`
}

// callerLeft reports whether a failed turn ended because its caller hung
// up (a barge-in), rather than because the shutdown grace ran out.
func callerLeft(c echo.Context) bool {
	ctx := c.Request().Context()
	return ctx.Err() != nil && !httpapi.ShuttingDown(ctx)
}

// accept refuses a new turn while the server is stopping, then binds the
// request body.
func (v *Voice) accept(c echo.Context) (voiceRequest, error) {
	if err := httpapi.RefuseWhileStopping(v.cfg.Stopping); err != nil {
		return voiceRequest{}, err
	}
	return v.bind(c)
}

// turn resolves the speaker and their memory into req, then runs the
// agent turn on the session key with req's prompt sandwich; onChunk and
// flush are acp.TurnRequest's (nil for a buffered turn).
func (v *Voice) turn(ctx context.Context, req *voiceRequest, key string, onChunk func(string), flush func()) (acp.TurnResult, error) {
	v.prepare(ctx, req)
	if req.deviceID != "" && v.cfg.Robot != nil {
		v.cfg.Robot.SetDevice(key, req.deviceID)
	}
	in := req.prompt()
	return v.cfg.Agent.Turn(ctx, acp.TurnRequest{
		Key:     key,
		Prompt:  func(i int) string { return v.buildPrompt(in, i) },
		OnChunk: onChunk,
		Flush:   flush,
	})
}

// lead is the lead of key's reply: the mood the agent set for it through
// the robot's tools, taken when the reply's first words are formed.
func (v *Voice) lead(key string) emoji.Lead {
	if v.cfg.Robot == nil {
		return nil
	}
	return func() (string, bool) { return v.cfg.Robot.TakeMood(key) }
}

// failed takes a route's failed turn: when its caller left (a barge-in)
// it logs left and reports false, as no reply is due; otherwise it sets
// o's kind and spoken fallback, logs the failure and reports true.
func (v *Voice) failed(ctx context.Context, c echo.Context, o *turnOutcome, err error, left string) bool {
	if callerLeft(c) {
		v.log.Debug(left, "session", o.req.sessionID)
		return false
	}
	o.kind, o.text = classify(ctx, err)
	v.log.Warn("voice turn failed", "session", o.req.sessionID, "kind", o.kind, "error", err)
	return true
}

// message is POST /api/message: one buffered reply.
func (v *Voice) message(c echo.Context) error {
	req, err := v.accept(c)
	if err != nil {
		return err
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(c.Request().Context(), v.cfg.Timeout)
	defer cancel()
	res, err := v.turn(ctx, &req, req.sessionID, nil, nil)
	elapsed := time.Since(t0)
	o := turnOutcome{endpoint: endpointMessage, req: req, elapsed: elapsed}
	if err != nil {
		if !v.failed(ctx, c, &o, err, "caller left; turn cancelled") {
			return nil
		}
	} else {
		o.text, o.phases = v.pipeline.BufferedLed(res.Text, v.lead(req.sessionID)), &res.Phases
		v.observeFirstAudio(elapsed)
		v.log.Info("voice turn", "session", req.sessionID, "elapsed", elapsed, "turn", res.TurnIndex)
	}
	// The reply goes out before the turn is recorded: the caller does not
	// wait for the conversation log's write.
	if err := httpapi.SendJSON(c, http.StatusOK, messageReply{Response: o.text, SessionID: req.sessionID, Emotion: emoji.XiaozhiEmotion(o.text)}); err != nil {
		v.log.Debug("caller left before the reply", "session", req.sessionID, "error", err)
	}
	v.record(o)
	return nil
}

// stream frames, field order as bridge.py wrote them (plus emotion).
type chunkFrame struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

type finalFrame struct {
	Type      string `json:"type"`
	Content   string `json:"content"`
	SessionID string `json:"session_id"`
	Emotion   string `json:"emotion"`
}

type errorFrame struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	SessionID string `json:"session_id"`
}

// stream is POST /api/message/stream: NDJSON chunks, then one final or
// error. A turn the shutdown grace ends gets the error frame like any
// failed turn; only a caller hanging up gets none.
func (v *Voice) stream(c echo.Context) error {
	req, err := v.accept(c)
	if err != nil {
		return err
	}
	resp := c.Response()
	resp.Header().Set(echo.HeaderContentType, NDJSONContentType)
	resp.Header().Set(echo.HeaderCacheControl, "no-cache")
	resp.Header().Set("X-Accel-Buffering", "no")
	resp.WriteHeader(http.StatusOK)
	resp.Flush() // headers before the agent is contacted
	out := newNDJSONWriter(resp, v.cfg.Heartbeat, v.cfg.Clock)
	defer out.close()

	t0 := time.Now()
	ctx, cancel := context.WithTimeout(c.Request().Context(), v.cfg.Timeout)
	defer cancel()
	st := v.pipeline.Stream().Lead(v.lead(req.sessionID))
	res, err := v.turn(ctx, &req, req.sessionID, func(delta string) {
		chunk, first := st.Push(delta)
		if first {
			v.observeFirstAudio(time.Since(t0))
		}
		if chunk != "" {
			out.frame(chunkFrame{Type: "chunk", Content: chunk})
		}
	}, out.flush)
	o := turnOutcome{endpoint: endpointStream, req: req}
	if err != nil {
		if !v.failed(ctx, c, &o, err, "barge-in: caller left; turn cancelled") {
			return nil
		}
		out.frame(errorFrame{Type: "error", Message: o.text, SessionID: req.sessionID})
		out.flush()
	} else {
		full, synth := st.Final(res.Text)
		if synth {
			out.frame(chunkFrame{Type: "chunk", Content: full})
		}
		out.frame(finalFrame{Type: "final", Content: full, SessionID: req.sessionID, Emotion: emoji.XiaozhiEmotion(full)})
		out.flush()
		o.text, o.phases = full, &res.Phases
		v.log.Info("voice turn", "session", req.sessionID, "elapsed", time.Since(t0), "turn", res.TurnIndex)
	}
	o.elapsed = time.Since(t0)
	if out.failed() {
		v.log.Debug("caller left before the last frame", "session", req.sessionID)
		return nil
	}
	v.record(o)
	return nil
}

// ndjsonWriter writes NDJSON frames and, while nothing has been written
// for the heartbeat interval, a bare newline. Frames go to the response
// buffer and reach the wire at flush, so frames that are ready together
// (chunks the agent sent back to back, the last chunks and the final
// frame) share one write; every flush point follows the frames at once,
// so no frame waits for a later one. It stops writing at the first error
// (the caller has gone). The heartbeat is a timer, not a goroutine, so a
// turn starts and ends without one.
type ndjsonWriter struct {
	w         *echo.Response
	heartbeat time.Duration
	clock     clockwork.Clock
	timer     clockwork.Timer

	mu     sync.Mutex
	last   time.Time
	err    error
	dirty  bool // written since the last flush
	closed bool
	buf    bytes.Buffer
}

func newNDJSONWriter(w *echo.Response, heartbeat time.Duration, clock clockwork.Clock) *ndjsonWriter {
	n := &ndjsonWriter{w: w, heartbeat: heartbeat, clock: clock, last: clock.Now()}
	n.mu.Lock() // the timer's first run waits until it is stored
	n.timer = clock.AfterFunc(heartbeat, n.beat)
	n.mu.Unlock()
	return n
}

var rawNEL = []byte("\u0085")

// frame writes v as one JSON line, to be sent at the next flush. U+0085 is
// escaped so no client that splits lines on it (Python's str.splitlines)
// can cut a frame.
func (n *ndjsonWriter) frame(v any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.buf.Reset()
	enc := json.NewEncoder(&n.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return
	}
	b := n.buf.Bytes()
	if bytes.Contains(b, rawNEL) {
		b = bytes.ReplaceAll(b, rawNEL, []byte(`\u0085`))
	}
	n.writeLocked(b)
}

func (n *ndjsonWriter) writeLocked(b []byte) {
	if n.err != nil || n.closed {
		return
	}
	if _, err := n.w.Write(b); err != nil {
		n.err = err
		return
	}
	n.dirty = true
	n.last = n.clock.Now()
}

// flush sends what frame wrote since the last flush.
func (n *ndjsonWriter) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.flushLocked()
}

func (n *ndjsonWriter) flushLocked() {
	if !n.dirty || n.err != nil {
		return
	}
	n.dirty = false
	if err := http.NewResponseController(n.w).Flush(); err != nil {
		n.err = err
	}
}

func (n *ndjsonWriter) failed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err != nil
}

// beat runs on the timer: a newline when heartbeat has passed without a
// frame, then the timer set for the next due time.
func (n *ndjsonWriter) beat() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	idle := n.clock.Since(n.last)
	if idle >= n.heartbeat {
		n.writeLocked([]byte("\n"))
		n.flushLocked()
		idle = 0
	}
	n.timer.Reset(n.heartbeat - idle)
}

// close flushes what is left and stops the heartbeat; nothing is written
// after it returns.
func (n *ndjsonWriter) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.flushLocked()
	n.closed = true
	n.timer.Stop()
}

// ReplyRequest is one buffered voice turn asked for by a caller other
// than the HTTP routes.
type ReplyRequest struct {
	// Endpoint labels the turn's metrics ("sidecar").
	Endpoint string
	// Key picks the agent session (acp.TurnRequest.Key).
	Key string
	// SessionID goes into the conversation log.
	SessionID string
	// Channel picks the prompt sandwich.
	Channel string
	// Content is what the user said.
	Content string
	// DeviceID is the robot's device id when known ("" otherwise): it
	// keys the speaker's self-ID latch and picks the perception block.
	DeviceID string
}

// Reply runs one buffered voice turn for a caller other than the HTTP
// routes (the firmware sidecar): the speaker and their memory as on the
// routes, the prompt sandwich for r.Channel, the agent turn keyed by r.Key
// (ctx bounds it, lease wait included, and its end cancels the turn like
// a barge-in), the reply pipeline, then metrics under r.Endpoint, the
// conversation log and the turn bus. On failure it returns the spoken
// fallback with the agent's error; a timeout is ctx's deadline passing.
func (v *Voice) Reply(ctx context.Context, r ReplyRequest) (string, error) {
	req := voiceRequest{content: r.Content, channel: r.Channel, sessionID: r.SessionID, deviceID: r.DeviceID}
	endpoint, key, sessionID := r.Endpoint, r.Key, r.SessionID
	t0 := time.Now()
	res, err := v.turn(ctx, &req, key, nil, nil)
	o := turnOutcome{endpoint: endpoint, req: req, elapsed: time.Since(t0)}
	if err != nil {
		o.kind, o.text = classify(ctx, err)
		v.record(o)
		v.log.Warn("voice turn failed", "endpoint", endpoint, "session", sessionID, "kind", o.kind, "error", err)
		return o.text, fmt.Errorf("voice turn %s: %w", o.kind, err)
	}
	o.text, o.phases = v.pipeline.BufferedLed(res.Text, v.lead(key)), &res.Phases
	v.record(o)
	v.log.Info("voice turn", "endpoint", endpoint, "session", sessionID, "elapsed", o.elapsed, "turn", res.TurnIndex)
	return o.text, nil
}
