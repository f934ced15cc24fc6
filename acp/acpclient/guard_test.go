package acpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// runGuard feeds input through a guard and returns what reached the SDK
// side, what the guard answered on stdin, and the drop reasons.
// Limits are scaled down (1 KiB to the SDK, 4 KiB in all) to keep -race fast.
func runGuard(t *testing.T, input string) (forwarded []string, answered string, drops []string) {
	t.Helper()
	var reply bytes.Buffer
	var mu sync.Mutex
	done := make(chan struct{})
	g := newStdoutGuard(strings.NewReader(input), &jsonrpc.LockedWriter{W: &reply}, hclog.NewNullLogger(),
		func(r string) { mu.Lock(); drops = append(drops, r); mu.Unlock() }, done)
	g.sdkLine, g.maxLine = 1<<10, 4<<10
	g.open()
	sc := bufio.NewScanner(g) // as the SDK reads it
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		forwarded = append(forwarded, sc.Text())
		g.notificationHandled()
	}
	mu.Lock()
	defer mu.Unlock()
	return forwarded, reply.String(), drops
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
	fwd, answered, drops := runGuard(t, input)
	if len(fwd) != 5 {
		t.Fatalf("forwarded %d frames, want 5: %.200q", len(fwd), fwd)
	}
	if !strings.Contains(fwd[0], `"session/update"`) || !strings.Contains(fwd[1], `"id":7`) ||
		!strings.Contains(fwd[2], "zc-out-0") || !strings.Contains(fwd[4], "$/cancel_request") {
		t.Errorf("unexpected forwarded frames: %.300q", fwd)
	}
	var errResp struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(fwd[3]), &errResp); err != nil || errResp.ID != 8 || errResp.Error.Code != jsonrpc.CodeInternal ||
		!strings.Contains(errResp.Error.Message, "too large") {
		t.Errorf("oversize response became %.200s (err %v)", fwd[3], err)
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
	fwd, _, drops := runGuard(t, huge+"\n"+`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	if len(fwd) != 1 || !strings.Contains(fwd[0], `"id":1`) || len(drops) != 1 {
		t.Errorf("forwarded %d, drops %v; want the huge line discarded and the next frame kept", len(fwd), drops)
	}
}

func TestGuardPacesNotifications(t *testing.T) {
	var in bytes.Buffer
	for i := 0; i < paceHigh+100; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"session/update","params":{"n":%d}}`+"\n", i)
	}
	done := make(chan struct{})
	defer close(done)
	g := newStdoutGuard(&in, io.Discard, hclog.NewNullLogger(), func(string) {}, done)
	g.open()
	sc := bufio.NewScanner(g)
	read := 0
	for read < paceHigh && sc.Scan() {
		read++
	}
	// Nothing handled yet: the guard must stop after paceHigh notifications.
	got := make(chan bool, 1)
	go func() { got <- sc.Scan() }()
	select {
	case <-got:
		t.Fatal("guard forwarded beyond the pacing limit with nothing handled")
	case <-time.After(100 * time.Millisecond):
	}
	for i := 0; i < paceHigh; i++ {
		g.notificationHandled()
	}
	if ok := <-got; !ok {
		t.Fatal("guard did not resume after notifications were handled")
	}
	read++
	for sc.Scan() {
		read++
		g.notificationHandled()
	}
	if read != paceHigh+100 {
		t.Errorf("read %d frames, want %d", read, paceHigh+100)
	}
}

func TestGuardBarrierWaitsForEarlierNotifications(t *testing.T) {
	g := newStdoutGuard(strings.NewReader(""), io.Discard, hclog.NewNullLogger(), func(string) {}, make(chan struct{}))
	g.forwarded.Store(3)
	g.handled.Store(1)
	returned := make(chan struct{})
	go func() {
		g.barrier(context.Background(), 5*time.Second)
		close(returned)
	}()
	g.notificationHandled() // 2 of 3
	select {
	case <-returned:
		t.Fatal("barrier returned before the earlier notifications were handled")
	case <-time.After(50 * time.Millisecond):
	}
	g.forwarded.Store(10) // later notifications do not extend the wait
	g.notificationHandled()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("barrier did not return once the notifications were handled")
	}
	// Bounded when nothing progresses: it returns at its limit (how soon
	// after depends on the machine, so it is printed, not asserted).
	start := time.Now()
	bounded := make(chan struct{})
	go func() {
		g.barrier(context.Background(), 50*time.Millisecond)
		close(bounded)
	}()
	select {
	case <-bounded:
		t.Logf("barrier with a 50ms limit returned after %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(time.Minute):
		t.Fatal("barrier ignored its limit")
	}
}
