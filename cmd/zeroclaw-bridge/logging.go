package main

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// readableDurations wraps a JSON logger so durations read "1.5s" or "250ms"
// instead of bare nanoseconds (encoding/json writes a time.Duration as its
// integer); the text format already prints them with units.
type readableDurations struct{ hclog.Logger }

func withReadableDurations(l hclog.Logger) hclog.Logger { return readableDurations{l} }

// durationsAsText returns args with every time.Duration as its String,
// copying the slice (the caller's may be shared) only when there is one.
func durationsAsText(args []any) []any {
	copied := false
	for i, a := range args {
		if d, ok := a.(time.Duration); ok {
			if !copied {
				args, copied = append([]any(nil), args...), true
			}
			args[i] = d.String()
		}
	}
	return args
}

func (r readableDurations) Log(level hclog.Level, msg string, args ...any) {
	r.Logger.Log(level, msg, durationsAsText(args)...)
}
func (r readableDurations) Trace(msg string, args ...any) {
	r.Logger.Trace(msg, durationsAsText(args)...)
}
func (r readableDurations) Debug(msg string, args ...any) {
	r.Logger.Debug(msg, durationsAsText(args)...)
}
func (r readableDurations) Info(msg string, args ...any) {
	r.Logger.Info(msg, durationsAsText(args)...)
}
func (r readableDurations) Warn(msg string, args ...any) {
	r.Logger.Warn(msg, durationsAsText(args)...)
}
func (r readableDurations) Error(msg string, args ...any) {
	r.Logger.Error(msg, durationsAsText(args)...)
}
func (r readableDurations) With(args ...any) hclog.Logger {
	return readableDurations{r.Logger.With(durationsAsText(args)...)}
}
func (r readableDurations) Named(name string) hclog.Logger {
	return readableDurations{r.Logger.Named(name)}
}
func (r readableDurations) ResetNamed(name string) hclog.Logger {
	return readableDurations{r.Logger.ResetNamed(name)}
}
