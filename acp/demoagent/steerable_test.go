package demoagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/sidecarwire/wiretest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// sidecarClient is a raw steerable client over pipes to ServeSteerable.
type sidecarClient struct {
	t      *testing.T
	in     *io.PipeWriter
	frames chan map[string]any
	served chan error
	stderr *testkit.LogBuffer
	id     int
}

func startSidecar(t *testing.T, ctx context.Context, opts Options) *sidecarClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &sidecarClient{t: t, in: inW, frames: make(chan map[string]any, 1000), served: make(chan error, 1), stderr: &testkit.LogBuffer{}}
	go func() {
		c.served <- ServeSteerable(ctx, inR, outW, c.stderr, opts)
		_ = outW.Close()
	}()
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var f map[string]any
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil || f == nil {
				t.Errorf("agent wrote a line that is not a JSON object: %q", sc.Text())
				continue
			}
			c.frames <- f
		}
	}()
	t.Cleanup(func() { _ = inW.Close(); c.wait() })
	return c
}

// wait returns ServeSteerable's result, once.
func (c *sidecarClient) wait() error {
	c.t.Helper()
	select {
	case err, ok := <-c.served:
		if ok {
			close(c.served)
		}
		return err
	case <-time.After(waitLimit):
		c.t.Fatal("ServeSteerable did not return")
		return nil
	}
}

// wantShutdown checks that the next frame is a lifecycle.shutdown for
// reason and that ServeSteerable then returns nil.
func (c *sidecarClient) wantShutdown(reason string) {
	c.t.Helper()
	if f := c.next(); f["method"] != "lifecycle.shutdown" || f["params"].(map[string]any)["reason"] != reason {
		c.t.Errorf("frame %v, want a lifecycle.shutdown for %q", f, reason)
	}
	if err := c.wait(); err != nil {
		c.t.Errorf("ServeSteerable = %v", err)
	}
}

func (c *sidecarClient) next() map[string]any {
	c.t.Helper()
	f := await(c.t, c.frames, "a frame from the agent")
	if f == nil { // frames is closed: it carries only JSON objects
		c.t.Fatal("the agent's output ended")
	}
	return f
}

// call sends a request and returns its response, collecting the
// notifications read before it.
func (c *sidecarClient) call(method string, params any) (resp map[string]any, notes []map[string]any) {
	c.t.Helper()
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	for {
		f := c.next()
		if id, ok := f["id"].(float64); ok && int(id) == c.id {
			return f, notes
		}
		notes = append(notes, f)
	}
}

// until reads notifications until one has method and the stream id.
func (c *sidecarClient) until(method, stream string) (notes []map[string]any) {
	c.t.Helper()
	for {
		f := c.next()
		notes = append(notes, f)
		if p, _ := f["params"].(map[string]any); f["method"] == method && p["streamId"] == stream {
			return notes
		}
	}
}

func result(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	if resp["error"] != nil {
		t.Fatalf("error response %v", resp)
	}
	r, _ := resp["result"].(map[string]any)
	return r
}

func deltas(notes []map[string]any, stream string) []string {
	var out []string
	for _, n := range notes {
		if p, _ := n["params"].(map[string]any); n["method"] == "stream.chunk" && p["streamId"] == stream {
			out = append(out, p["delta"].(string))
		}
	}
	return out
}

func TestServeSteerable(t *testing.T) {
	verifyNoLeaks(t)
	c := startSidecar(t, context.Background(), Options{})
	if f := c.next(); f["method"] != "lifecycle.ready" {
		t.Fatalf("first frame %v, want lifecycle.ready", f)
	}
	marker := strings.TrimSpace(c.stderr.String())
	var ready map[string]any
	if !strings.HasPrefix(marker, "__SIDECAR_READY__:") || json.Unmarshal([]byte(strings.TrimPrefix(marker, "__SIDECAR_READY__:")), &ready) != nil ||
		ready["status"] != "ok" || ready["name"] != Name || ready["protocolVersion"] != "0.1.0" {
		t.Errorf("stderr %q", marker)
	}
	ping, _ := c.call("system.ping", nil)
	if h := result(t, ping); h["status"] != "ok" || h["name"] != Name || h["loadedTools"] != float64(0) {
		t.Errorf("ping %v", h)
	}
	// What the real sidecar refuses, the demo refuses with its errors.
	wiretest.Check(t, wiretest.Refusals, func(method string, params any) map[string]any {
		r, _ := c.call(method, params)
		return r
	})
	created, _ := c.call("agent.session.create", map[string]any{"chatId": "dotty-k-0123"})
	sess := result(t, created)
	sid, _ := sess["sessionId"].(string)
	if !strings.HasPrefix(sid, "demo-") || sess["chatId"] != "dotty-k-0123" || sess["userId"] != "local" || sess["id"] != nil {
		t.Fatalf("session %v", created)
	}
	if r, _ := c.call("agent.session.resume", map[string]string{"sessionId": sid}); result(t, r)["sessionId"] != sid {
		t.Errorf("resume %v", r)
	}
	if r, _ := c.call("agent.session.list", nil); len(r["result"].([]any)) != 1 {
		t.Errorf("list %v", r)
	}
	// A notification is not answered: the next frame answers the ping.
	if _, err := c.in.Write([]byte(`{"jsonrpc":"2.0","method":"agent.session.create","params":{"chatId":"x"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if r, notes := c.call("system.ping", nil); len(notes) != 0 || r["error"] != nil {
		t.Errorf("after a notification: %v then %v", notes, r)
	}
	prompt := "[User] hello steerable demo"
	chat, _ := c.call("agent.chat.stream", map[string]any{"sessionId": sid, "model": "m", "messages": []map[string]string{
		{"role": "user", "content": "[User] earlier"}, {"role": "assistant", "content": "x"}, {"role": "user", "content": prompt}}})
	stream, _ := result(t, chat)["streamId"].(string)
	notes := c.until("stream.done", stream)
	if got := strings.Join(deltas(notes, stream), ""); got != Reply(prompt) || len(deltas(notes, stream)) < 3 {
		t.Errorf("streamed %q, want %q in chunks", deltas(notes, stream), Reply(prompt))
	}
	if p := notes[len(notes)-1]["params"].(map[string]any); p["ok"] != true {
		t.Errorf("done %v", p)
	}
	// No model, no provider, no messages: the real sidecar's factory
	// wants a model, but the demo has none to build; it answers.
	empty, _ := c.call("agent.chat.stream", map[string]any{"messages": []any{}})
	c.until("stream.done", result(t, empty)["streamId"].(string))
	// A null result is no result member, as the sidecar sends it.
	bye, _ := c.call("system.shutdown", nil)
	if _, ok := bye["result"]; ok || bye["error"] != nil {
		t.Errorf("shutdown answer %v", bye)
	}
	c.wantShutdown("normal")
}

func TestServeSteerableCancel(t *testing.T) {
	verifyNoLeaks(t)
	c := startSidecar(t, context.Background(), Options{ChunkDelay: time.Minute, QuietReady: true})
	c.next() // lifecycle.ready
	chat, _ := c.call("agent.chat.stream", map[string]any{"messages": []map[string]string{{"role": "user", "content": "a long one"}}})
	stream := result(t, chat)["streamId"].(string)
	c.until("stream.chunk", stream)
	// The cancelled stream's done notification races the cancel's reply: it
	// may be among the notes read before the reply, or still to come.
	r, notes := c.call("agent.chat.cancel", map[string]string{"streamId": stream})
	if r["error"] != nil {
		t.Errorf("cancel %v", r)
	}
	for _, n := range notes {
		if p, _ := n["params"].(map[string]any); n["method"] != "stream.done" || p["streamId"] != stream {
			t.Errorf("before the cancel's reply %v; only the stream's done may come", n)
		}
	}
	if len(notes) == 0 {
		notes = c.until("stream.done", stream)
	}
	if p := notes[len(notes)-1]["params"].(map[string]any); p["cancelled"] != true || p["ok"] != false {
		t.Errorf("done after cancel %v", p)
	}
	if strings.Contains(c.stderr.String(), "__SIDECAR_READY__") {
		t.Error("quiet-ready wrote the marker")
	}
	_ = c.in.Close()
	c.wantShutdown("eof")
}

func TestServeSteerableStopsWhenContextEnds(t *testing.T) {
	verifyNoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := startSidecar(t, ctx, Options{ChunkDelay: time.Minute})
	c.next()
	chat, _ := c.call("agent.chat.stream", map[string]any{"messages": []map[string]string{{"role": "user", "content": "forever"}}})
	c.until("stream.chunk", result(t, chat)["streamId"].(string))
	cancel()
	if err := c.wait(); err != nil {
		t.Errorf("ServeSteerable = %v", err)
	}
}

// The demo sidecar's session table is bounded: a flood of creates keeps
// the newest maxDemoSessions, and the oldest is forgotten (its resume is
// refused as the real sidecar refuses an unknown session).
func TestServeSteerableSessionsBounded(t *testing.T) {
	verifyNoLeaks(t)
	c := startSidecar(t, context.Background(), Options{QuietReady: true})
	c.next() // lifecycle.ready
	var first, last string
	for i := range 4 * maxDemoSessions {
		r, _ := c.call("agent.session.create", map[string]any{"chatId": fmt.Sprint("chat-", i)})
		id, _ := result(t, r)["sessionId"].(string)
		if id == "" {
			t.Fatalf("create %d: %v", i, r)
		}
		if i == 0 {
			first = id
		}
		last = id
	}
	if r, _ := c.call("agent.session.list", nil); len(r["result"].([]any)) != maxDemoSessions {
		t.Errorf("%d sessions listed, want %d", len(r["result"].([]any)), maxDemoSessions)
	}
	if r, _ := c.call("agent.session.resume", map[string]string{"sessionId": last}); r["error"] != nil {
		t.Errorf("the newest session: %v", r)
	}
	if r, _ := c.call("agent.session.resume", map[string]string{"sessionId": first}); r["error"] == nil {
		t.Errorf("the oldest session was kept: %v", r)
	}
}
