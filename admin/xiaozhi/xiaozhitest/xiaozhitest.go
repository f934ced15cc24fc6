// Package xiaozhitest is a fake xiaozhi-esp32-server admin API for tests:
// it records every request and answers with scripted statuses, bodies and
// delays (200 {"ok":true} by default). With TakesPhotos and RecordsAudio
// it also plays the robot: a take-photo or capture-audio it accepted is
// followed by the upload the firmware would make to the bridge.
package xiaozhitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
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
	hooks   map[string]func(Call)
	stop    chan struct{}
	running sync.WaitGroup // hooks in flight
}

// New starts a fake and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{replies: map[string]Reply{}, hooks: map[string]func(Call){}, stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.stop) // release stalled handlers and hooks first
		s.Server.Close()
		s.running.Wait()
	})
	return s
}

// After runs fn on its own goroutine after each successful (status < 400)
// answer to path, as the robot acts after xiaozhi has answered.
func (s *Server) After(path string, fn func(Call)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[path] = fn
}

// TakesPhotos makes every accepted take-photo upload jpeg to bridgeURL's
// /api/vision/explain with the call's device id and question, as the
// firmware does.
func (s *Server) TakesPhotos(bridgeURL string, jpeg []byte) {
	s.After("/xiaozhi/admin/take-photo", func(c Call) {
		q, _ := c.Body["question"].(string)
		s.upload(bridgeURL+"/api/vision/explain", c, "photo.jpg", "image/jpeg", jpeg, q)
	})
}

// RecordsAudio makes every accepted capture-audio upload clip (WAV) to
// bridgeURL's /api/audio/explain with the call's device id.
func (s *Server) RecordsAudio(bridgeURL string, clip []byte) {
	s.After("/xiaozhi/admin/capture-audio", func(c Call) {
		s.upload(bridgeURL+"/api/audio/explain", c, "clip.wav", "audio/wav", clip, "")
	})
}

// upload posts one multipart file like the firmware; failures (the bridge
// under test already stopped) are ignored.
func (s *Server) upload(url string, c Call, name, contentType string, file []byte, question string) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	h["Content-Type"] = []string{contentType}
	part, _ := w.CreatePart(h)
	_, _ = part.Write(file)
	if question != "" {
		_ = w.WriteField("question", question)
	}
	_ = w.Close()
	req, err := http.NewRequest(http.MethodPost, url, &body)
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	if d, _ := c.Body["device_id"].(string); d != "" {
		req.Header.Set("device-id", d)
	}
	ctx, cancel := contextUntil(s.stop, 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
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
	s.mu.Lock()
	hook := s.hooks[r.URL.Path]
	s.mu.Unlock()
	if hook == nil || rep.Status >= 400 {
		return
	}
	select {
	case <-s.stop:
		return
	default:
	}
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		hook(c)
	}()
}

// contextUntil is a context that ends when stop closes or after d.
func contextUntil(stop <-chan struct{}, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
