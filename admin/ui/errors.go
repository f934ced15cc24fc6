package ui

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
)

// Today's errors: the failed turns of the day, read from the conversation
// log as bridge.py's errors view does, so they survive a restart and
// cover the whole day, not only the turns the page saw.

const (
	// maxErrorScan bounds how much of the day's log is read, from its
	// end: far more than a household's day of turns (about 1 KiB each).
	maxErrorScan = 4 << 20
	// maxErrorLine skips a longer line; convolog clips texts to 4 KiB.
	maxErrorLine = 64 << 10
	// maxErrorsKept is how many of the newest errors are sent.
	maxErrorsKept = 200
)

// todayErrors is GET /ui/api/errors/today.
type todayErrors struct {
	// Date is the log's day, in the household's time zone.
	Date string `json:"date"`
	// Count is every failed turn in the part of the log read; Errors the
	// newest maxErrorsKept of them, newest first, as turn frames.
	Count  int               `json:"count"`
	Errors []json.RawMessage `json:"errors"`
	// Partial is true when the log was longer than maxErrorScan and only
	// its end was read.
	Partial bool `json:"partial,omitempty"`
	// Error says why the log could not be read ("" when it was, or when
	// there is none yet today).
	Error string `json:"error,omitempty"`
}

// logRecord is what today's errors need of a conversation log line.
type logRecord struct {
	TS           string  `json:"ts"`
	Channel      string  `json:"channel"`
	RequestText  string  `json:"request_text"`
	ResponseText string  `json:"response_text"`
	EmojiUsed    string  `json:"emoji_used"`
	LatencyMS    int64   `json:"latency_ms"`
	Error        *string `json:"error"`
}

// errorsToday is GET /ui/api/errors/today; 404 when the log is not wired.
func (u *UI) errorsToday(c echo.Context) error {
	if u.cfg.ConvoLogPath == nil {
		return httpapi.NewError(http.StatusNotFound, "conversation log not configured")
	}
	now := u.cfg.Clock.Now().In(u.cfg.Location)
	res := todayErrors{Date: now.Format(time.DateOnly), Errors: []json.RawMessage{}}
	path := u.cfg.ConvoLogPath(now)
	var ring [][]byte // the newest maxErrorsKept, oldest first
	err := convolog.ScanTail(path, maxErrorScan, maxErrorLine, func(line []byte) {
		var r logRecord
		if json.Unmarshal(line, &r) != nil || r.Error == nil || *r.Error == "" {
			return
		}
		res.Count++
		if len(ring) == maxErrorsKept {
			ring = ring[1:]
		}
		ring = append(ring, u.encode(r.turn(u.cfg.Location)))
	})
	switch {
	case errors.Is(err, fs.ErrNotExist): // no turn yet today
	case err != nil:
		u.log.Warn("cannot read today's conversation log for the errors view", "path", path, "error", err)
		res.Error = "cannot read today's conversation log: " + err.Error()
	}
	if info, err := os.Stat(path); err == nil && info.Size() > maxErrorScan {
		res.Partial = true
	}
	for i := len(ring) - 1; i >= 0; i-- {
		res.Errors = append(res.Errors, ring[i])
	}
	return httpapi.WriteJSON(c, http.StatusOK, res)
}

// turn is the logged turn as the feed's turn, so a turn both in the log
// and in the feed has the same frame.
func (r logRecord) turn(loc *time.Location) turnbus.Turn {
	t := turnbus.Turn{Channel: r.Channel, RequestText: r.RequestText, ResponseText: r.ResponseText,
		EmojiUsed: r.EmojiUsed, Emotion: emoji.XiaozhiEmotion(r.ResponseText), Latency: time.Duration(r.LatencyMS) * time.Millisecond}
	if ts, err := time.Parse(time.RFC3339Nano, r.TS); err == nil {
		t.TS = ts.In(loc)
	}
	if r.Error != nil {
		t.Error = *r.Error
	}
	return t
}
