package demoagent

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogHandler forwards the SDK's log/slog diagnostics to an hclog.Logger,
// so that they go where the rest of the agent's logs go (never to out).
type slogHandler struct {
	log    hclog.Logger
	args   []any  // key/value pairs bound by WithAttrs
	prefix string // group path for later keys, "a.b." style
}

func newSlogHandler(log hclog.Logger) *slogHandler { return &slogHandler{log: log} }

// Enabled implements slog.Handler.
func (h *slogHandler) Enabled(_ context.Context, level slog.Level) bool {
	switch {
	case level < slog.LevelInfo:
		return h.log.IsDebug()
	case level < slog.LevelWarn:
		return h.log.IsInfo()
	case level < slog.LevelError:
		return h.log.IsWarn()
	default:
		return h.log.IsError()
	}
}

// Handle implements slog.Handler.
func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, len(h.args)+2*r.NumAttrs())
	args = append(args, h.args...)
	r.Attrs(func(a slog.Attr) bool {
		args = appendAttr(args, h.prefix, a)
		return true
	})
	switch {
	case r.Level < slog.LevelInfo:
		h.log.Debug(r.Message, args...)
	case r.Level < slog.LevelWarn:
		h.log.Info(r.Message, args...)
	case r.Level < slog.LevelError:
		h.log.Warn(r.Message, args...)
	default:
		h.log.Error(r.Message, args...)
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	args := append([]any(nil), h.args...)
	for _, a := range attrs {
		args = appendAttr(args, h.prefix, a)
	}
	return &slogHandler{log: h.log, args: args, prefix: h.prefix}
}

// WithGroup implements slog.Handler.
func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &slogHandler{log: h.log, args: h.args, prefix: h.prefix + name + "."}
}

// appendAttr flattens a into key/value pairs with dotted group keys.
func appendAttr(args []any, prefix string, a slog.Attr) []any {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, ga := range v.Group() {
			args = appendAttr(args, prefix, ga)
		}
		return args
	}
	if a.Equal(slog.Attr{}) {
		return args
	}
	return append(args, prefix+a.Key, v.Any())
}
