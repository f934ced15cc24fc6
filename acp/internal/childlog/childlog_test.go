package childlog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestLineLimiter(t *testing.T) {
	clk := testkit.NewClock()
	var buf testkit.LogBuffer
	l := NewLimiter(hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: &buf}), 3, clk)
	for i := 0; i < 10; i++ {
		l.Emit(hclog.Info, fmt.Sprintf("line %d", i))
	}
	l.Emit(hclog.Error, "panic survives the cap")
	clk.Advance(time.Second)
	l.Emit(hclog.Info, "next window")
	out := buf.String()
	if strings.Count(out, "line ") != 3 || !strings.Contains(out, "dropped=7") ||
		!strings.Contains(out, "panic survives") || !strings.Contains(out, "next window") {
		t.Errorf("limiter output:\n%s", out)
	}
}

func TestCleanLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain line", "plain line"},
		{"\x1b[2m2026\x1b[0m \x1b[1;31mERROR\x1b[0m boom", "2026 ERROR boom"},
		{"a\tb\r", "a b"},
		{"title\x1b]0;window\x07 after", "title after"},
		{"osc\x1b]8;;http://x\x1b\\link", "osclink"},
		{"bell\a and nul\x00", "bell and nul"},
		{"bad \xff utf8 ✓", "bad \ufffd utf8 ✓"},
		{"trailing escape \x1b", "trailing escape "},
		{"a\x1b(Bb \x1b7saved\x1b8", "ab saved"},
		{"broken \x1b[31✓ kept", "broken ✓ kept"},
		{"esc before \x1b✓ rune", "esc before ✓ rune"},
		{"\x1b[?25l\x1b[2Khidden cursor", "hidden cursor"},
		{"unfinished \x1b[31", "unfinished "},
	} {
		if got := CleanLine(tt.in); got != tt.want {
			t.Errorf("CleanLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
