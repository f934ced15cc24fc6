// Package llmtest is the fake OpenAI-compatible chat endpoint for tests
// (the narrative model, the vision and audio models, Tier1's thinker): it
// records every request and answers a scripted chat completion. Requests
// to a path that does not end in /chat/completions are recorded and
// answered 404, so a client calling the wrong path fails as it would
// against the real service.
package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one recorded request.
type Request struct {
	Path string         // the URL path
	Auth string         // the Authorization header ("" when absent)
	Body map[string]any // the decoded JSON body (nil when it is not JSON)
}

// Reply scripts the answer to a request.
type Reply struct {
	// Text is the assistant message's content.
	Text string
	// Status is the HTTP status (0 is 200); the body is a chat completion
	// with Text whatever the status.
	Status int
	// Func, when set, answers the request instead of Text and Status.
	Func func(w http.ResponseWriter, r *http.Request)
	// Delay holds the answer this long; a request whose context ends, or a
	// test that ends, first gets none.
	Delay time.Duration
	// Block holds the request, unanswered, until its context ends or the
	// test does (a model that never answers).
	Block bool
}

// Server is the fake.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	requests []Request
	reply    Reply
	audio    *Reply
	stop     chan struct{}
}

// New starts a fake answering text with 200 and closes it when the test
// ends.
func New(t testing.TB, text string) *Server {
	t.Helper()
	s := &Server{reply: Reply{Text: text}, stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.stop) // release held requests first
		s.Server.Close()
	})
	return s
}

// Set scripts the answer to the requests from now on.
func (s *Server) Set(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = r
}

// Answer is Set(Reply{Text: text}).
func (s *Server) Answer(text string) { s.Set(Reply{Text: text}) }

// SetAudio scripts a separate answer to the requests carrying an audio
// clip (an "input_audio" content part); the others keep Set's.
func (s *Server) SetAudio(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audio = &r
}

// Requests returns the requests so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Request returns the i-th request (from 0); it panics when there are not
// that many.
func (s *Server) Request(i int) Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

// Count is the number of requests so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
	reply := s.reply
	if s.audio != nil && bytes.Contains(raw, []byte(`"input_audio"`)) {
		reply = *s.audio
	}
	s.mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	if reply.Block {
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
	if reply.Func != nil {
		reply.Func(w, r)
		return
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "created": 0, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": reply.Text}}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
