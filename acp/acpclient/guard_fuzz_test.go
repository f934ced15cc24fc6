package acpclient

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/childlog"
)

// FuzzGuard feeds arbitrary agent stdout through the guard: it never
// panics or hangs, everything it forwards to the SDK is one JSON object
// per line within the size limit, and everything it answers the agent is
// a JSON-RPC error response.
func FuzzGuard(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"session/request_permission","params":{}}`,
		`{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file"}` + "\n" + `{not json`,
		"INFO log line\n\x1b[32mcolour\x1b[0m\n\n",
		`{"id":null}` + "\n" + `{"method":""}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
		strings.Repeat("x", 5000),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		forwarded, answered, _ := runGuard(t, input)
		for _, line := range forwarded {
			if len(line) > 1<<10+256 { // the test guard's SDK limit, plus an error frame
				t.Fatalf("forwarded %d bytes past the limit", len(line))
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				t.Fatalf("forwarded a non-object line %q: %v", line, err)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(answered), "\n") {
			if line == "" {
				continue
			}
			var resp struct {
				Error *struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.Error == nil {
				t.Fatalf("answered the agent with %q", line)
			}
		}
	})
}

// FuzzCleanLine: whatever a child writes, the cleaned line is valid UTF-8
// with no control characters, and a clean line comes back unchanged.
func FuzzCleanLine(f *testing.F) {
	for _, seed := range []string{
		"plain ✓ line", "\x1b[2m2026\x1b[0m \x1b[1;31mERROR\x1b[0m", "a\tb\r\a", "\x1b]0;t\x07x",
		"\x1b]8;;u\x1b\\l", "\x1b(B", "\x1b[31✓", "\x1b", "\xff\xfe", "\u0085c1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := childlog.CleanLine(in)
		if !utf8.ValidString(out) {
			t.Fatalf("childlog.CleanLine(%q) = %q: invalid UTF-8", in, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("childlog.CleanLine(%q) = %q: control %U left", in, out, r)
			}
		}
		if again := childlog.CleanLine(out); again != out {
			t.Fatalf("CleanLine not idempotent on %q: %q then %q", in, out, again)
		}
	})
}
