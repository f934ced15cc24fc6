// Package convolog writes the bridge's daily NDJSON files. The
// conversation log is one record per completed voice turn in
// <dir>/convo-YYYY-MM-DD.ndjson, in bridge.py's schema and key order; the
// robot's journals (security watch, scene synthesis, idle perception) are
// Daily file sets beside it. Everywhere the directory is 0700, files are
// 0600, dates are in the configured time zone, and a write failure is
// logged and counted and never fails the turn or the behaviour.
package convolog

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Record is one completed turn.
type Record struct {
	// TS is when the turn completed.
	TS time.Time
	// Type is "chat" for voice turns.
	Type string
	// Channel is the request channel, "" when none.
	Channel string
	// SessionID is the caller's or the generated session id.
	SessionID string
	// RequestText is the raw request content, not the prompt sandwich.
	RequestText string
	// ResponseText is the text returned to the caller, fallback strings included.
	ResponseText string
	// EmojiUsed is the allowed emoji starting ResponseText, or "".
	EmojiUsed string
	// Latency is the turn time.
	Latency time.Duration
	// Error is "" or the failure kind (timeout, binary_missing, exception).
	Error string
	// Phases are the agent's latency phases; nil omits them (failed turns).
	Phases *Phases
}

// Phases are bridge.py's latency_phases.
type Phases struct {
	Total, NewSession, Prompt, Stop time.Duration
	Reused                          bool
}

// MarshalJSON writes bridge.py's latency_phases object: whole
// milliseconds, and reused as 1.0 or 0.0.
func (p Phases) MarshalJSON() ([]byte, error) {
	reused := json.RawMessage("0.0")
	if p.Reused {
		reused = json.RawMessage("1.0")
	}
	return json.Marshal(phasesJSON{
		TotalMS:  p.Total.Round(time.Millisecond).Milliseconds(),
		NewMS:    p.NewSession.Round(time.Millisecond).Milliseconds(),
		PromptMS: p.Prompt.Round(time.Millisecond).Milliseconds(),
		StopMS:   p.Stop.Round(time.Millisecond).Milliseconds(),
		Reused:   reused,
	})
}

// Config configures the log.
type Config struct {
	// Dir is CONVO_LOG_DIR.
	Dir string
	// Location is the zone of file dates and timestamps (TZ).
	Location *time.Location
	// Logger receives write failures. Nil discards.
	Logger hclog.Logger
	// Failures counts records that could not be written; nil counts
	// nothing.
	Failures prometheus.Counter
	// Health is the conditions set the log marks while it cannot write
	// (see DailyConfig.Health); nil keeps a private one.
	Health *health.Conditions
}

// DefaultConfig is the log's settings as bridge.py had them: its
// directory.
func DefaultConfig() Config { return Config{Dir: "/root/zeroclaw-bridge/logs"} }

// Log appends records; safe for concurrent use.
type Log struct {
	loc   *time.Location
	log   hclog.Logger
	daily *Daily
}

// New returns a log writing under cfg.Dir, creating the directory (0700)
// now; a failure is logged and retried at the next write.
func New(cfg Config) *Log {
	d := NewDaily(DailyConfig{Dir: cfg.Dir, Prefix: "convo", Location: cfg.Location, Logger: cfg.Logger,
		Failures: cfg.Failures, What: "the conversation log; turns continue without it", Health: cfg.Health})
	return &Log{loc: d.loc, log: d.log, daily: d}
}

// Path returns the file a record stamped t goes to.
func (l *Log) Path(t time.Time) string { return l.daily.Path(t) }

// Write appends r. Failures are logged (once per cause, at Warn), never
// returned.
func (l *Log) Write(r Record) {
	line, err := Encode(r, l.loc)
	if err != nil {
		l.log.Error("cannot encode conversation record", "error", err)
		return
	}
	l.daily.appendLine(r.TS, line)
}

// record is the on-disk shape; field order is bridge.py's.
type record struct {
	TS            string  `json:"ts"`
	Type          string  `json:"type"`
	Channel       string  `json:"channel"`
	SessionID     string  `json:"session_id"`
	RequestText   string  `json:"request_text"`
	ResponseLen   int     `json:"response_len"`
	ResponseText  string  `json:"response_text"`
	EmojiUsed     string  `json:"emoji_used"`
	LatencyMS     int64   `json:"latency_ms"`
	Error         *string `json:"error"`
	LatencyPhases *Phases `json:"latency_phases,omitempty"`
	// RequestLen is the request's length in code points, written only when
	// request_text was clipped (a Go addition after bridge.py's keys, the
	// request-side twin of response_len).
	RequestLen int `json:"request_len,omitempty"`
}

type phasesJSON struct {
	TotalMS  int64           `json:"total_ms"`
	NewMS    int64           `json:"new_ms"`
	PromptMS int64           `json:"prompt_ms"`
	StopMS   int64           `json:"stop_ms"`
	Reused   json.RawMessage `json:"reused"`
}

// MaxText is the most UTF-8 bytes of request or response text a record
// keeps; the log lives on an SD card and one turn must not fill it.
const MaxText = 4 << 10

// TextCut cuts a record's string to at most MaxText bytes on a rune
// boundary, ending in "…" when it was cut (text.Truncate).
var TextCut = text.Cut{Max: MaxText, Bytes: true, Mark: "…", MarkInside: true}

// Encode returns r as one NDJSON line (with its newline), raw UTF-8. Its
// strings are clipped to MaxText bytes each (the voice routes already
// refuse long channels and session ids; other writers may not): response_len
// still counts the whole response, and a clipped request adds request_len
// with the whole request's length in code points.
func Encode(r Record, loc *time.Location) ([]byte, error) {
	if loc == nil {
		loc = time.Local
	}
	out := record{
		TS:           Timestamp(r.TS.In(loc)),
		Type:         r.Type,
		Channel:      text.Truncate(r.Channel, TextCut),
		SessionID:    text.Truncate(r.SessionID, TextCut),
		RequestText:  text.Truncate(r.RequestText, TextCut),
		ResponseLen:  utf8.RuneCountInString(r.ResponseText),
		ResponseText: text.Truncate(r.ResponseText, TextCut),
		EmojiUsed:    r.EmojiUsed,
		LatencyMS:    r.Latency.Round(time.Millisecond).Milliseconds(),
	}
	if out.Type == "" {
		out.Type = "chat"
	}
	if len(out.RequestText) != len(r.RequestText) {
		out.RequestLen = utf8.RuneCountInString(r.RequestText)
	}
	if r.Error != "" {
		e := r.Error
		out.Error = &e
	}
	out.LatencyPhases = r.Phases
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Timestamp formats t like Python's datetime.isoformat(): microseconds
// unless they are zero, then the numeric offset.
func Timestamp(t time.Time) string {
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05-07:00")
	}
	return t.Format("2006-01-02T15:04:05.000000-07:00")
}
