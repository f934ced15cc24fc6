package acpclient

import (
	"encoding/json"
	"strings"
	"testing"
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
		r := runGuard(t, input)
		for _, line := range r.forwarded {
			if len(line) > 1<<10+256 { // the test guard's SDK limit, plus an error frame
				t.Fatalf("forwarded %d bytes past the limit", len(line))
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				t.Fatalf("forwarded a non-object line %q: %v", line, err)
			}
		}
		for _, n := range r.notified { // method, space, params: params are JSON when present
			if _, params, _ := strings.Cut(n, " "); params != "" && !json.Valid([]byte(params)) {
				t.Fatalf("handled a notification with params %q", params)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(r.answered), "\n") {
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
