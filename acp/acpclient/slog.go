package acpclient

import (
	"context"
	"log/slog"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// slogHandler forwards the SDK's slog records to hclog and remembers the
// cause of the last "connection closed" record for the exit report (H9).
type slogHandler struct {
	log   hclog.Logger
	attrs []any
	cause *closeCause
}

type closeCause struct {
	mu  sync.Mutex
	val string
}

func (c *closeCause) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.val
}

func newSlogLogger(log hclog.Logger) (*slog.Logger, *closeCause) {
	cc := &closeCause{}
	return slog.New(&slogHandler{log: log, cause: cc}), cc
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return hclogLevel(l) >= h.log.GetLevel()
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		if r.Message == "connection closed" && a.Key == "cause" {
			h.cause.mu.Lock()
			h.cause.val = a.Value.String()
			h.cause.mu.Unlock()
		}
		args = append(args, a.Key, a.Value.Any())
		return true
	})
	h.log.Log(hclogLevel(r.Level), r.Message, args...)
	return nil
}

func (h *slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]any(nil), h.attrs...)
	for _, a := range as {
		n.attrs = append(n.attrs, a.Key, a.Value.Any())
	}
	return &n
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.log = h.log.Named(name)
	return &n
}

func hclogLevel(l slog.Level) hclog.Level {
	switch {
	case l >= slog.LevelError:
		return hclog.Error
	case l >= slog.LevelWarn:
		return hclog.Warn
	case l >= slog.LevelInfo:
		return hclog.Info
	default:
		return hclog.Debug
	}
}
