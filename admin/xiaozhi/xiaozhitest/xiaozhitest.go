// Package xiaozhitest is a fake xiaozhi-esp32-server admin API for tests:
// it records every request and answers with scripted statuses, bodies and
// delays (200 {"ok":true} by default).
package xiaozhitest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Call is one recorded request.
type Call struct {
	Method string
	Path   string
	Token  string // X-Admin-Token
	Body   map[string]any
	Raw    []byte
}

// Reply scripts the answer to a path.
type Reply struct {
	Status int
	Body   string
	Delay  time.Duration
}

// Server is the fake.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	calls   []Call
	replies map[string]Reply
	stop    chan struct{}
}

// New starts a fake and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{replies: map[string]Reply{}, stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.stop) // release stalled handlers first
		s.Server.Close()
	})
	return s
}

// HostPort returns the host and port to configure the client with.
func (s *Server) HostPort() (string, int) {
	host, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return host, p
}

// Set scripts path's answer.
func (s *Server) Set(path string, r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies[path] = r
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsTo returns the requests to path.
func (s *Server) CallsTo(path string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := Call{Method: r.Method, Path: r.URL.Path, Token: r.Header.Get("X-Admin-Token"), Raw: raw}
	_ = json.Unmarshal(raw, &c.Body)
	s.mu.Lock()
	s.calls = append(s.calls, c)
	rep, ok := s.replies[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		rep = Reply{Status: http.StatusOK, Body: `{"ok":true}`}
	}
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.Status)
	_, _ = io.WriteString(w, rep.Body)
}
