package acpclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// guardRun is what a guard did with its input: the frames that reached
// the SDK side, the notifications it handled itself (method and params,
// in order), what it answered on stdin, and the drop reasons.
type guardRun struct {
	forwarded []string
	notified  []string
	answered  string
	drops     []string
}

// runGuard feeds input through a guard, reading it as the SDK does.
// Limits are scaled down (1 KiB to the SDK, 4 KiB in all) to keep -race fast.
func runGuard(t *testing.T, input string) guardRun {
	t.Helper()
	var reply bytes.Buffer
	var mu sync.Mutex
	var r guardRun
	done := make(chan struct{})
	g := newStdoutGuard(strings.NewReader(input), &jsonrpc.LockedWriter{W: &reply}, hclog.NewNullLogger(),
		func(d string) { mu.Lock(); r.drops = append(r.drops, d); mu.Unlock() },
		func(method string, params json.RawMessage) {
			r.notified = append(r.notified, method+" "+string(params))
		}, done)
	g.sdkLine, g.maxLine = 1<<10, 4<<10
	g.open()
	sc := bufio.NewScanner(g) // as the SDK reads it
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		r.forwarded = append(r.forwarded, sc.Text())
	}
	mu.Lock()
	defer mu.Unlock()
	r.answered = reply.String()
	return r
}

func TestGuardClassifiesFrames(t *testing.T) {
	big := strings.Repeat("a", 1<<10+10)
	input := strings.Join([]string{
		"2026-05-17T10:00:00Z  INFO zeroclaw::acp: prompt received",
		"\x1b[32mcoloured log\x1b[0m",
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}`,
		`{"jsonrpc":"2.0","id":"zc-out-0","method":"session/request_permission","params":{}}`,
		`{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":{}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"text":"` + big + `"}}`,
		`{"jsonrpc":"2.0","id":8,"result":{"pad":"` + big + `"}}`,
		`{"jsonrpc":"2.0","method":"session/request_permission","params":{}}`,
		`{not json`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`,
		"",
	}, "\n")
	r := runGuard(t, input)
	fwd, answered, drops := r.forwarded, r.answered, r.drops
	if len(fwd) != 4 {
		t.Fatalf("forwarded %d frames, want 4: %.200q", len(fwd), fwd)
	}
	if !strings.Contains(fwd[0], `"id":7`) || !strings.Contains(fwd[1], "zc-out-0") || !strings.Contains(fwd[3], "$/cancel_request") {
		t.Errorf("unexpected forwarded frames: %.300q", fwd)
	}
	// The notification is handled by the guard, never handed to the SDK.
	if len(r.notified) != 1 || r.notified[0] != `session/update {"sessionId":"S"}` {
		t.Errorf("notifications handled: %q, want the one session/update with its params", r.notified)
	}
	var errResp struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(fwd[2]), &errResp); err != nil || errResp.ID != 8 || errResp.Error.Code != jsonrpc.CodeInternal ||
		!strings.Contains(errResp.Error.Message, "too large") {
		t.Errorf("oversize response became %.200s (err %v)", fwd[2], err)
	}
	if !strings.Contains(answered, `"id":9`) || !strings.Contains(answered, fmt.Sprint(jsonrpc.CodeMethodNotFound)) {
		t.Errorf("unserved request not answered -32601: %q", answered)
	}
	if len(drops) != 1 || drops[0] != "oversize" {
		t.Errorf("drops %v, want one oversize notification", drops)
	}
}

func TestGuardHandlesLinesOverHardLimit(t *testing.T) {
	huge := `{"jsonrpc":"2.0","method":"session/update","params":"` + strings.Repeat("b", 4<<10) + `"}`
	r := runGuard(t, huge+"\n"+`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	if len(r.forwarded) != 1 || !strings.Contains(r.forwarded[0], `"id":1`) || len(r.drops) != 1 || len(r.notified) != 0 {
		t.Errorf("forwarded %d, notified %d, drops %v; want the huge line discarded and the next frame kept", len(r.forwarded), len(r.notified), r.drops)
	}
}

// Notifications are handled in the order they were sent, each before any
// frame after it reaches the SDK, however many arrive at once: the SDK's
// own notification queue (1 024 slots, and the connection closes when it
// overflows) is never used.
func TestGuardHandlesNotificationsInOrderBeforeLaterFrames(t *testing.T) {
	const n = 5000
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`+"\n", i)
	}
	in.WriteString(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	done := make(chan struct{})
	defer close(done)
	var handled int
	g := newStdoutGuard(&in, io.Discard, hclog.NewNullLogger(), func(string) {}, func(method string, params json.RawMessage) {
		if want := fmt.Sprintf(`{"n":%d}`, handled); method != "session/update" || string(params) != want {
			t.Errorf("notification %d: %s %s, want session/update %s", handled, method, params, want)
		}
		handled++
	}, done)
	g.open()
	sc := bufio.NewScanner(g)
	if !sc.Scan() {
		t.Fatalf("nothing forwarded: %v", sc.Err())
	}
	if handled != n {
		t.Errorf("the response reached the SDK after %d of %d notifications were handled", handled, n)
	}
	if !strings.Contains(sc.Text(), `"id":1`) || sc.Scan() {
		t.Errorf("forwarded %q (and more: %v), want only the response", sc.Text(), sc.Text())
	}
}
