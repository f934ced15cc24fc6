package acp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestStderrPumpTailAndLevels(t *testing.T) {
	var buf testkit.LogBuffer
	p := newStderrPump(hclogFor(&buf), 5, clockwork.NewFakeClock())
	var in strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	in.WriteString("thread 'main' panicked at src/main.rs:1:1: boom\n")
	in.WriteString(strings.Repeat("z", stderrLineCap+5) + "\nlast")
	p.run(strings.NewReader(in.String()))
	// The tail holds only what the cap kept out of the log: the logged
	// lines are not repeated in the exit report.
	tail := p.Tail()
	if len(tail) != stderrTailLen || tail[len(tail)-1] != "last" || !strings.Contains(tail[len(tail)-2], "over 64 KiB") {
		t.Errorf("tail = %q", tail)
	}
	for _, l := range tail {
		if l == "line 0" || strings.Contains(l, "panicked") {
			t.Errorf("logged line %q repeated in the tail", l)
		}
	}
	if !strings.Contains(buf.String(), "[ERROR] test: thread 'main' panicked") {
		t.Errorf("panic line not at error level:\n%s", buf.String())
	}
}
