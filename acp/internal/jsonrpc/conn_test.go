package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is the far end of a Conn over real pipes: it reads the Conn's
// lines and writes lines back.
type peer struct {
	lines chan string
	w     *io.PipeWriter
}

func newPair(t *testing.T, opts Options) (*Conn, *peer) {
	t.Helper()
	toPeer, fromConn := io.Pipe()
	toConn, fromPeer := io.Pipe()
	c := NewConn(fromConn, opts)
	p := &peer{lines: make(chan string, 64), w: fromPeer}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(toPeer)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- c.Run(toConn) }()
	t.Cleanup(func() {
		_ = fromPeer.Close()
		_ = toPeer.Close()
		recv(t, done, "Run's end")
	})
	return c, p
}

// recv waits, at most 5 s, for a value from ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5 s", what)
		var zero T
		return zero
	}
}

func (p *peer) next(t *testing.T) string {
	t.Helper()
	return recv(t, p.lines, "line from the conn")
}

func (p *peer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := p.w.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

func TestCallMatchesAnswersByID(t *testing.T) {
	c, p := newPair(t, Options{})
	type out struct {
		res json.RawMessage
		err error
	}
	first, second := make(chan out, 1), make(chan out, 1)
	go func() {
		r, err := c.Call(context.Background(), "a", map[string]int{"n": 1}, CallOptions{})
		first <- out{r, err}
	}()
	if got := p.next(t); got != `{"jsonrpc":"2.0","id":1,"method":"a","params":{"n":1}}` {
		t.Fatalf("request on the wire: %s", got)
	}
	go func() {
		r, err := c.Call(context.Background(), "b", nil, CallOptions{})
		second <- out{r, err}
	}()
	if got := p.next(t); got != `{"jsonrpc":"2.0","id":2,"method":"b"}` {
		t.Fatalf("request without params: %s", got)
	}
	// Answered out of order, one id echoed as a string.
	p.send(t, `{"jsonrpc":"2.0","id":"2","error":{"code":-32601,"message":"no","kind":"method_not_found"}}`)
	p.send(t, `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`)
	o := recv(t, first, "answer to the first call")
	if o.err != nil || string(o.res) != `{"ok":true}` {
		t.Fatalf("first call: %s, %v", o.res, o.err)
	}
	o = recv(t, second, "answer to the second call")
	var e *Error
	if !errors.As(o.err, &e) || e.Code != CodeMethodNotFound || e.Kind != "method_not_found" {
		t.Fatalf("second call's error: %v", o.err)
	}
}

func TestHandlerGetsEverythingElseInOrder(t *testing.T) {
	var mu sync.Mutex
	var got []string
	seen := make(chan struct{}, 16)
	_, p := newPair(t, Options{
		MaxLine: 64,
		Handle: func(m *Message) {
			mu.Lock()
			got = append(got, m.Method+"|"+string(m.ID))
			mu.Unlock()
			seen <- struct{}{}
		},
		Noise: func(line []byte, err error) {
			mu.Lock()
			got = append(got, "noise:"+string(line))
			mu.Unlock()
			seen <- struct{}{}
		},
		Oversize: func() {
			mu.Lock()
			got = append(got, "oversize")
			mu.Unlock()
			seen <- struct{}{}
		},
	})
	p.send(t, `{"jsonrpc":"2.0","method":"note","params":{}}`)
	p.send(t, `  not json  `)
	p.send(t, `{"jsonrpc":"2.0","id":7,"method":"ask"}`)
	p.send(t, `{"jsonrpc":"2.0","id":99,"result":null}`) // nobody waits
	p.send(t, `{"jsonrpc":"2.0","method":"`+strings.Repeat("x", 100)+`"}`)
	p.send(t, `null`)
	for range 6 {
		recv(t, seen, "frame handed on")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"note|", "noise:not json", "ask|7", "|99", "oversize", "noise:null"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("handled %q, want %q", got, want)
	}
}

func TestGivenUpCallForgottenOrKeptForItsLateAnswer(t *testing.T) {
	stray := make(chan string, 4)
	c, p := newPair(t, Options{Handle: func(m *Message) { stray <- string(m.ID) }})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "forgotten", nil, CallOptions{})
		errc <- err
	}()
	p.next(t)
	cancel()
	if err := recv(t, errc, "given-up call's return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("given-up call returned %v", err)
	}
	p.send(t, `{"jsonrpc":"2.0","id":1,"result":1}`)
	if id := recv(t, stray, "late answer handed on"); id != "1" {
		t.Fatalf("late answer of a forgotten call handed on as %s", id)
	}

	late := make(chan string, 1)
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		_, err := c.Call(ctx, "kept", nil, CallOptions{OnLate: func(m *Message) { late <- string(m.Result) }})
		errc <- err
	}()
	p.next(t)
	cancel()
	recv(t, errc, "given-up call's return")
	p.send(t, `{"jsonrpc":"2.0","id":2,"result":{"streamId":"s"}}`)
	if r := recv(t, late, "late answer at its call"); r != `{"streamId":"s"}` {
		t.Fatalf("late answer %s", r)
	}
}

func TestCloseFailsPendingCalls(t *testing.T) {
	c, p := newPair(t, Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), "x", nil, CallOptions{})
		errc <- err
	}()
	p.next(t)
	c.Close()
	if err := recv(t, errc, "pending call's return"); !errors.Is(err, ErrClosed) {
		t.Fatalf("pending call after Close: %v", err)
	}
	if _, err := c.Call(context.Background(), "y", nil, CallOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
}

func TestLateTableBounded(t *testing.T) {
	c := NewConn(io.Discard, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 10 * maxLate {
		_, _ = c.Call(ctx, "x", nil, CallOptions{OnLate: func(*Message) {}})
	}
	c.mu.Lock()
	n, p := len(c.late), len(c.pending)
	c.mu.Unlock()
	if n != maxLate || p != 0 {
		t.Fatalf("late table holds %d (bound %d), pending %d", n, maxLate, p)
	}
}

func TestMessagesOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		m    func() (Message, error)
		want string
	}{
		{func() (Message, error) { return NewNotification("n", map[string]string{"a": "<b>"}) }, `{"jsonrpc":"2.0","method":"n","params":{"a":"\u003cb\u003e"}}`},
		{func() (Message, error) { return NewResponse(json.RawMessage(`"k"`), nil, nil) }, `{"jsonrpc":"2.0","id":"k"}`},
		{func() (Message, error) {
			return NewResponse(nil, nil, &Error{Code: -32700, Message: "bad", Kind: "parse"})
		}, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad","kind":"parse"}}`},
		{func() (Message, error) { return NewResponse(json.RawMessage(`3`), []int{}, nil) }, `{"jsonrpc":"2.0","id":3,"result":[]}`},
	} {
		m, err := tc.m()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Encode(m)
		if string(b) != tc.want {
			t.Errorf("got %s, want %s", b, tc.want)
		}
	}
	if got := string(ErrorFrame(json.RawMessage("null"), CodeInternal, "x")); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}` {
		t.Errorf("ErrorFrame: %s", got)
	}
}

func TestDecodeTellsRequestsFromAnswers(t *testing.T) {
	m, ok, err := Decode([]byte(` {"jsonrpc":"2.0","id":null,"method":"m"} `))
	if err != nil || !ok || !m.IsRequest() || m.HasID() {
		t.Fatalf("a null id: request to a server, no id to match: %+v %v %v", m, ok, err)
	}
	m, ok, err = Decode([]byte(`{"method":"m"}`))
	if err != nil || !ok || m.IsRequest() {
		t.Fatalf("no id member: a notification: %+v %v %v", m, ok, err)
	}
	if _, ok, err := Decode([]byte(`null`)); err != nil || ok {
		t.Fatalf("JSON that is not an object: %v %v", ok, err)
	}
	var h Head
	if err := json.Unmarshal([]byte(`{"id":null,"method":"m"}`), &h); err != nil || h.ID != nil || h.Method != "m" {
		t.Fatalf("Head reads a null id as none: %+v %v", h, err)
	}
	if err := json.Unmarshal([]byte(`{"id":"a","result":{}}`), &h); err != nil || h.ID == nil || string(*h.ID) != `"a"` {
		t.Fatalf("Head keeps an id: %+v %v", h, err)
	}
}
