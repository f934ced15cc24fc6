package convolog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

var brisbane = testkit.Zone("Australia/Brisbane")

func TestEncodeKeyOrderAndValues(t *testing.T) {
	ts := time.Date(2026, 5, 17, 11, 37, 17, 123456000, time.UTC)
	tests := []struct {
		name string
		r    Record
		want string
	}{
		{"completed turn", Record{TS: ts, Channel: "dotty", SessionID: "s1", RequestText: "hi <there>",
			ResponseText: "😊 Hello!", EmojiUsed: "😊", Latency: 1234567 * time.Microsecond,
			Phases: &Phases{Total: 1234 * time.Millisecond, NewSession: 5 * time.Millisecond, Prompt: 1229 * time.Millisecond, Reused: true}},
			`{"ts":"2026-05-17T21:37:17.123456+10:00","type":"chat","channel":"dotty","session_id":"s1","request_text":"hi <there>","response_len":8,"response_text":"😊 Hello!","emoji_used":"😊","latency_ms":1235,"error":null,"latency_phases":{"total_ms":1234,"new_ms":5,"prompt_ms":1229,"stop_ms":0,"reused":1.0}}` + "\n"},
		{"failed turn omits phases", Record{TS: ts.Truncate(time.Second), ResponseText: "😐 My AI brain is offline.", EmojiUsed: "😐", Error: "binary_missing"},
			`{"ts":"2026-05-17T21:37:17+10:00","type":"chat","channel":"","session_id":"","request_text":"","response_len":25,"response_text":"😐 My AI brain is offline.","emoji_used":"😐","latency_ms":0,"error":"binary_missing"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.r, brisbane)
			if err != nil || string(got) != tt.want {
				t.Errorf("got  %s\nwant %s (err %v)", got, tt.want, err)
			}
		})
	}
}

func TestWriteFilesModesAndDates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	l := New(Config{Dir: dir, Location: brisbane})
	// 13:59 UTC is 23:59 in Brisbane; 14:01 UTC is the next local day.
	before := time.Date(2026, 5, 17, 13, 59, 0, 0, time.UTC)
	after := time.Date(2026, 5, 17, 14, 1, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Write(Record{TS: before, ResponseText: "😊 a"})
		}()
	}
	wg.Wait()
	l.Write(Record{TS: after, ResponseText: "😊 b"})
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v (%v)", st.Mode().Perm(), err)
	}
	first, second := filepath.Join(dir, "convo-2026-05-17.ndjson"), filepath.Join(dir, "convo-2026-05-18.ndjson")
	for path, lines := range map[string]int{first: 20, second: 1} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n != lines {
			t.Errorf("%s has %d lines, want %d", path, n, lines)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", path, st.Mode().Perm())
		}
	}
}

func TestWriteFailureIsLoggedNotFatal(t *testing.T) {
	blocker := testkit.Blocker(t, filepath.Join(t.TempDir(), "file"))
	var buf bytes.Buffer
	l := New(Config{Dir: filepath.Join(blocker, "logs"), Logger: hclog.New(&hclog.LoggerOptions{Output: &buf})})
	l.Write(Record{TS: time.Now(), ResponseText: "x"})
	l.Write(Record{TS: time.Now(), ResponseText: "y"})
	if n := strings.Count(buf.String(), "[WARN]"); n != 1 {
		t.Errorf("%d warnings, want exactly one:\n%s", n, buf.String())
	}
}

// A 16 KiB turn writes a bounded record: both texts are clipped on a rune
// boundary with "…", and response_len still counts the whole response.
func TestLongTurnIsClipped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	l := New(Config{Dir: dir, Location: brisbane})
	long := strings.Repeat("é", 8<<10) // 16 KiB
	ts := time.Date(2026, 5, 17, 11, 37, 17, 0, time.UTC)
	l.Write(Record{TS: ts, Channel: "dotty", RequestText: long, ResponseText: "😊 " + long})
	b, err := os.ReadFile(l.Path(ts))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2*MaxText+512 {
		t.Errorf("record is %d bytes, want at most %d", len(b), 2*MaxText+512)
	}
	clipped := text.Truncate(long, TextCut)
	if !strings.Contains(string(b), `"request_text":"`+clipped+`"`) || !strings.HasSuffix(clipped, "é…") || len(clipped) > MaxText {
		t.Errorf("request_text not clipped on a rune boundary: %d bytes", len(clipped))
	}
	if !strings.Contains(string(b), `"response_len":8194,`) {
		t.Errorf("response_len does not count the whole response: %s", b[:200])
	}
	// Strings other writers may send long (the voice routes refuse them)
	// are clipped too.
	l.Write(Record{TS: ts, Channel: long, SessionID: long})
	b2, _ := os.ReadFile(l.Path(ts))
	if second := b2[len(b):]; len(second) > 2*MaxText+512 || !bytes.Contains(second, []byte(`"channel":"`+clipped+`","session_id":"`+clipped+`"`)) {
		t.Errorf("long channel and session id not clipped: %d bytes", len(second))
	}
	if !strings.HasSuffix(string(b), `,"request_len":8192}`+"\n") {
		t.Errorf("clipped request has no request_len with its whole length: …%s", b[len(b)-80:])
	}
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{{"short", 10, "short"}, {"abcdef", 5, "ab…"}, {"éééé", 6, "é…"}, {"éééé", 8, "éééé"}} {
		c := TextCut
		c.Max = tt.n
		if got := text.Truncate(tt.in, c); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
