// Package xiaozhitest is a fake xiaozhi-esp32-server admin API for tests
// and simulators: it records requests and answers with scripted statuses,
// bodies and delays (200 {"ok":true} by default). With TakesPhotos,
// RecordsAudio, ReportsStates and Talks it also plays the robot: a
// take-photo or capture-audio it accepted is followed by the upload the
// firmware would make to the bridge, a set-state by the firmware's
// state_changed event, an inject-text by xiaozhi's turn.
//
// Its memory is bounded: it keeps the last Options.Keep calls and a count
// of calls per path, so a week of calls leaves it the size of a minute's.
package xiaozhitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DefaultKeep is how many calls a Server keeps when Options.Keep is 0:
// more than any test makes.
const DefaultKeep = 1024

// MaxPaths bounds the per-path counters: calls to paths past the first
// MaxPaths distinct ones are counted together under OtherPaths.
const MaxPaths = 256

// OtherPaths is the CountTo key of the paths past MaxPaths.
const OtherPaths = "*"

// Options configure a Server.
type Options struct {
	// Keep is how many of the latest calls Calls and CallsTo return (0:
	// DefaultKeep); older ones are only counted (CountTo).
	Keep int
	// FirstRobot is the robot a call naming none goes to when the fake
	// plays AnyRobot, as xiaozhi sends it to the first connected device.
	FirstRobot string
}

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

	keep     int
	first    string // Options.FirstRobot
	mu       sync.Mutex
	calls    []Call         // the latest calls, oldest first: keep to 2*keep of them
	counts   map[string]int // calls per path, bounded by MaxPaths
	replies  map[string]Reply
	hooks    map[string]func(Call)
	life     context.Context // ends at Close: releases stalled handlers and hooks
	end      context.CancelFunc
	closing  sync.Once
	running  sync.WaitGroup // hooks in flight
	inFlight atomic.Int64   // requests being answered plus hooks running
	failures atomic.Int64   // robot posts that failed
}

// New starts a fake and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake on a loopback port; Close stops it.
func Start(o Options) (*Server, error) {
	if o.Keep < 0 {
		return nil, fmt.Errorf("xiaozhitest: Options.Keep %d is negative", o.Keep)
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("xiaozhitest: listen: %w", err)
	}
	s := &Server{keep: o.Keep, first: o.FirstRobot, counts: map[string]int{}, replies: map[string]Reply{}, hooks: map[string]func(Call){}}
	s.life, s.end = context.WithCancel(context.Background())
	s.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}}
	s.Server.Start()
	return s, nil
}

// Close releases stalled requests and hooks, stops the server and waits
// for the hooks to end. It may be called more than once.
func (s *Server) Close() {
	s.closing.Do(func() {
		s.end() // release stalled handlers and hooks first
		s.Server.Close()
		s.running.Wait()
	})
}

// InFlight is the number of requests being answered plus the robot's
// hooks still running: 0 when the fake is idle.
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

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

// AnyRobot, as the deviceID of ReportsStates and Talks, makes the fake
// play every robot: each call's answer comes from the robot it names.
const AnyRobot = "*"

// ReportsStates makes every accepted set-state for the robot (device id
// deviceID, or "": the first connected device, or AnyRobot) post the firmware's
// state_changed event to bridgeURL's /api/perception/event, as xiaozhi's
// relay does. The event carries no ts, so the bridge stamps it with its
// own clock.
func (s *Server) ReportsStates(bridgeURL, deviceID string) {
	s.After("/xiaozhi/admin/set-state", func(c Call) {
		state, _ := c.Body["state"].(string)
		if state == "" || !addressed(c, deviceID) {
			return
		}
		event := map[string]any{"device_id": s.robotOf(c, deviceID), "name": "state_changed", "data": map[string]any{"state": state}}
		s.postJSON(bridgeURL+"/api/perception/event", event, 10*time.Second)
	})
}

// Talks makes every accepted inject-text for the robot (device id
// deviceID, or "", or AnyRobot) a turn xiaozhi's ZeroClawLLM provider takes with the
// bridge: the text POSTed to bridgeURL's /api/message (buffered) with the
// channel "dotty" and one session id for this robot's connection. Unlike
// the real provider, it names the robot in metadata.device_id, so the
// bridge's per-device prompt parts take part.
func (s *Server) Talks(bridgeURL, deviceID string) {
	var mu sync.Mutex
	sessions := map[string]string{} // per robot; bounded by the robots that exist
	s.After("/xiaozhi/admin/inject-text", func(c Call) {
		text, _ := c.Body["text"].(string)
		if text == "" || !addressed(c, deviceID) {
			return
		}
		robot := s.robotOf(c, deviceID)
		mu.Lock()
		session, ok := sessions[robot]
		if !ok && len(sessions) < MaxPaths {
			session = uuid4()
			sessions[robot] = session
		}
		mu.Unlock()
		turn := map[string]any{
			"content": text, "channel": "dotty", "session_id": session,
			"metadata": map[string]any{"provider": "zeroclaw", "device_id": robot},
		}
		s.postJSON(bridgeURL+"/api/message", turn, 90*time.Second) // the provider's timeout
	})
}

// RobotFailures is the number of the robot's posts to the bridge that
// failed or were answered an error status.
func (s *Server) RobotFailures() int { return int(s.failures.Load()) }

// addressed reports whether c is for the robot deviceID: xiaozhi sends a
// call without a device id to the first connected device.
func addressed(c Call, deviceID string) bool {
	d, _ := c.Body["device_id"].(string)
	return d == "" || d == deviceID || deviceID == AnyRobot
}

// robotOf is the robot that answers c for a fake playing deviceID: the
// one c names when the fake plays AnyRobot, else Options.FirstRobot.
func (s *Server) robotOf(c Call, deviceID string) string {
	if deviceID != AnyRobot {
		return deviceID
	}
	if d, _ := c.Body["device_id"].(string); d != "" {
		return d
	}
	return s.first
}

// uuid4 is a random UUIDv4, as xiaozhi's session ids.
func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// postJSON posts v as JSON to url, giving up after d or at Close.
func (s *Server) postJSON(url string, v any, d time.Duration) {
	b, err := json.Marshal(v)
	if err != nil {
		s.failures.Add(1)
		return
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		s.failures.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	s.send(req, d)
}

// upload posts one multipart file like the firmware.
func (s *Server) upload(url string, c Call, name, contentType string, file []byte, question string) {
	d, _ := c.Body["device_id"].(string)
	req, err := UploadRequest(url, d, name, contentType, file, question)
	if err != nil {
		s.failures.Add(1)
		return
	}
	s.send(req, 10*time.Second)
}

// UploadRequest is the POST the firmware makes to upload a photo or a
// clip to url: file as the multipart part "file" named name, question
// (if any) as the field "question", deviceID (if any) in the device-id
// header. A simulator sends it for a robot acting on its own (a room
// view).
func UploadRequest(url, deviceID, name, contentType string, file []byte, question string) (*http.Request, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	h["Content-Type"] = []string{contentType}
	part, _ := w.CreatePart(h) // a buffer takes every write
	_, _ = part.Write(file)
	if question != "" {
		_ = w.WriteField("question", question)
	}
	_ = w.Close()
	req, err := http.NewRequest(http.MethodPost, url, &body)
	if err != nil {
		return nil, fmt.Errorf("xiaozhitest: upload to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	if deviceID != "" {
		req.Header.Set("device-id", deviceID)
	}
	return req, nil
}

// send does req, giving up after d or at Close, and counts a failure or
// an error status (the bridge under test may already have stopped: tests
// ignore these).
func (s *Server) send(req *http.Request, d time.Duration) {
	ctx, cancel := context.WithTimeout(s.life, d)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		s.failures.Add(1)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		s.failures.Add(1)
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

// Calls returns the latest requests (at most Options.Keep), oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls[max(0, len(s.calls)-s.keep):]...)
}

// CallsTo returns the requests to path among Calls.
func (s *Server) CallsTo(path string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// CountTo is the number of requests to path since the start, kept or not
// (OtherPaths: those to the paths past MaxPaths).
func (s *Server) CountTo(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// recordLocked keeps c and counts it. The log is trimmed to the latest
// keep calls each time it reaches twice that, so appending stays cheap.
func (s *Server) recordLocked(c Call) {
	if len(s.calls) >= 2*s.keep {
		s.calls = append(make([]Call, 0, 2*s.keep), s.calls[len(s.calls)-s.keep+1:]...)
	}
	s.calls = append(s.calls, c)
	key := c.Path
	if _, ok := s.counts[key]; !ok && len(s.counts) >= MaxPaths {
		key = OtherPaths
	}
	s.counts[key]++
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	raw, _ := io.ReadAll(r.Body)
	c := Call{Method: r.Method, Path: r.URL.Path, Token: r.Header.Get("X-Admin-Token"), Raw: raw}
	_ = json.Unmarshal(raw, &c.Body)
	s.mu.Lock()
	s.recordLocked(c)
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
		case <-s.life.Done():
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
	if s.life.Err() != nil {
		return
	}
	s.running.Add(1)
	s.inFlight.Add(1) // before the handler's own count ends: no idle gap
	go func() {
		defer s.running.Done()
		defer s.inFlight.Add(-1)
		hook(c)
	}()
}
