package bridgeapp

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// lockedBuffer is a bytes.Buffer safe for the flush timer's goroutine.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) snapshot() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.writes
}

// Lines from many goroutines all arrive, each whole, in fewer writes than
// lines; Close leaves nothing behind, and a line after Close is written
// at once.
func TestLogWriterBatchesAndKeepsEveryLine(t *testing.T) {
	var out lockedBuffer
	lw := newLogWriter(&out)
	lw.delay = time.Hour // the writes are counted: no timer flush may split them
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				fmt.Fprintf(lw, "writer %d line %d\n", w, i)
			}
		}()
	}
	wg.Wait()
	_ = lw.Close()
	got, writes := out.snapshot()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	next := map[int]int{}
	for _, l := range lines {
		var w, i int
		if _, err := fmt.Sscanf(l, "writer %d line %d", &w, &i); err != nil || i != next[w] {
			t.Fatalf("line %q out of order or torn (want line %d of writer %d)", l, next[w], w)
		}
		next[w]++
	}
	if writes >= writers*each {
		t.Errorf("%d writes for %d lines: nothing was batched", writes, writers*each)
	}
	fmt.Fprintln(lw, "after close")
	if got, _ := out.snapshot(); !strings.HasSuffix(got, "after close\n") {
		t.Error("a line after Close was not written at once")
	}
}

// A lone line reaches the output without any further write or Close.
func TestLogWriterFlushesALoneLine(t *testing.T) {
	var out lockedBuffer
	lw := newLogWriter(&out)
	defer lw.Close()
	fmt.Fprintln(lw, "alone")
	testkit.WaitFor(t, 5*time.Second, "the lone line", func() bool { got, _ := out.snapshot(); return got == "alone\n" })
}

// A burst past the buffer's bound is written by the caller, after what was
// buffered: memory stays bounded and order is kept.
func TestLogWriterBoundsItsBuffer(t *testing.T) {
	var out lockedBuffer
	lw := newLogWriter(&out)
	defer lw.Close()
	fmt.Fprintln(lw, "first")
	big := strings.Repeat("x", logBufferMax) + "\n"
	_, _ = lw.Write([]byte(big))
	got, _ := out.snapshot()
	if got != "first\n"+big {
		t.Fatalf("output %d bytes, want the buffered line then the burst", len(got))
	}
	lw.mu.Lock()
	n := len(lw.buf)
	lw.mu.Unlock()
	if n != 0 {
		t.Errorf("%d bytes left buffered", n)
	}
}

// A warning or an error goes out at once, after the lines before it, in
// either log format.
func TestLogWriterWritesWarningsAtOnce(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var out lockedBuffer
		lw := newLogWriter(&out)
		lw.delay = time.Hour // only the warning may write the buffered line
		log := newLogger(config{LogLevel: hclog.Info, LogFormat: format}, lw)
		log.Info("before")
		log.Warn("trouble")
		got, writes := out.snapshot()
		if !strings.Contains(got, "before") || !strings.Contains(got, "trouble") || strings.Index(got, "before") > strings.Index(got, "trouble") {
			t.Errorf("%s: output %q, want both lines at once, in order", format, got)
		}
		if writes != 1 {
			t.Errorf("%s: %d writes, want the buffered line and the warning in one", format, writes)
		}
		_ = lw.Close()
	}
}
