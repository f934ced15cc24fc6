package acp

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/childlog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

const (
	stderrLineCap = 64 << 10
	stderrTailLen = 20
)

// stderrPump reads the child's stderr line by line into a logger, with the
// rate cap, a per-line size cap, panics raised to Error, and a short tail
// of the lines the cap kept out of the log, for the exit report (lines
// already logged are not repeated there).
type stderrPump struct {
	limiter *childlog.Limiter
	// observe, when set, sees every cleaned line before the rate cap (the
	// protocol's ready marker must not be lost to it).
	observe func(line string)

	mu   sync.Mutex
	tail []string
}

func newStderrPump(log hclog.Logger, perSecond int, c clockwork.Clock) *stderrPump {
	return &stderrPump{limiter: childlog.NewLimiter(log, perSecond, c)}
}

func (p *stderrPump) run(r io.Reader) {
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, tooLong, err := jsonrpc.ReadLine(br, stderrLineCap)
		if tooLong {
			p.line("[stderr line over 64 KiB discarded]")
		} else if len(line) > 0 {
			p.line(strings.ToValidUTF8(string(line), "\uFFFD"))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.limiter.Logger().Debug("stderr read ended", "error", err)
			}
			break
		}
	}
	p.limiter.Flush()
}

func (p *stderrPump) line(s string) {
	s = childlog.CleanLine(s)
	if p.observe != nil {
		p.observe(s)
	}
	s = childlog.RedactSecrets(s) // logged and kept in the tail only redacted
	if p.limiter.Emit(stderrLevel(s), s) {
		return
	}
	p.mu.Lock()
	if len(p.tail) == stderrTailLen {
		copy(p.tail, p.tail[1:])
		p.tail = p.tail[:stderrTailLen-1]
	}
	p.tail = append(p.tail, s)
	p.mu.Unlock()
}

// Tail returns the last lines the rate cap kept out of the log, oldest
// first.
func (p *stderrPump) Tail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tail...)
}

func stderrLevel(s string) hclog.Level {
	l := strings.ToLower(s)
	switch {
	case strings.Contains(l, "panic"):
		return hclog.Error
	case strings.Contains(l, "error"):
		return hclog.Warn
	default:
		return hclog.Info
	}
}
