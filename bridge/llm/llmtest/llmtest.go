// Package llmtest is the fake model server for tests: the narrative model,
// the vision and audio models and Tier1's thinker call its OpenAI Chat
// Completions endpoint, and the real ACP agents of the end-to-end tests
// call the API their SDK speaks (wire.go): OpenAI Responses (codex-acp),
// Anthropic Messages (claude-agent-acp) and Gemini generateContent
// (gemini-cli), each buffered or streamed.
//
// It records requests and answers a scripted reply: text (fixed, or
// computed from the request's prompt), or a call of a tool the request
// offers followed, once the request carries the tool's result, by text.
// Requests to a path that is none of those APIs are recorded and answered
// 404, so a client calling the wrong path fails as it would against the
// real service.
//
// Its memory is bounded, so a simulator can run it for a week: it keeps
// the last Options.Keep requests, a count per path and, when asked, the
// last Options.KeepLines prompt lines.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DefaultKeep is how many requests a Server keeps when Options.Keep is 0:
// more than any test makes.
const DefaultKeep = 1024

// MaxPaths bounds the per-path counters: requests to paths past the first
// MaxPaths distinct ones are counted together under OtherPaths.
const MaxPaths = 256

// OtherPaths is the CountTo key of the paths past MaxPaths.
const OtherPaths = "*"

// Options configure a Server.
type Options struct {
	// Text is the answer until Set scripts another.
	Text string
	// Keep is how many of the latest requests are kept (0: DefaultKeep);
	// older ones are only counted.
	Keep int
	// KeepLines is how many of the latest prompt lines Lines returns (0:
	// none are recorded).
	KeepLines int
}

// Prompt is what a request asks the model, as Reply.Answer sees it.
type Prompt struct {
	// Text is the request's message texts (system or instructions first)
	// joined by newlines.
	Text string
	// Images are the images of its Chat Completions image_url parts that
	// are base64 data URLs, decoded.
	Images [][]byte
}

// Request is one recorded request.
type Request struct {
	Path string         // the URL path
	Auth string         // the Authorization header ("" when absent)
	Body map[string]any // the decoded JSON body (nil when it is not JSON)

	// API is the wire format the path selected (ChatCompletions,
	// Responses, Messages, Gemini); "" for a path answered 404.
	API string
	// Stream reports a streamed answer was asked for.
	Stream bool
	// Tools are the names of the tools the request offers the model (a
	// tool in a Responses namespace as namespace/name: NamespaceSep).
	Tools []string
	// Results are the tool results the request carries, oldest first.
	Results []ToolResult
	// Called is the tool call the request was answered with, its Name the
	// offered tool's; nil when it was answered otherwise.
	Called *ToolCall
	// Aborted reports the client went away before the answer was
	// complete: a barge-in that reached the model.
	Aborted bool
}

// ToolResult is a tool's result as the agent sent it back to the model.
type ToolResult struct {
	CallID string // the call's id ("" when the API carries none)
	Name   string // the tool's name, when the API carries it
	Output string // the text (Gemini: the response's output or error, else the response as JSON)
	Error  bool   // the agent flagged the result as an error
}

// ToolCall is a call of a tool the model makes.
type ToolCall struct {
	ID   string // the call's id, unique within a conversation
	Name string // a tool the request offers
	// Suffix, when Name is empty, calls the first tool the request offers
	// named Suffix or ending in Suffix after a "_", ".", "/" or ":": an MCP
	// server's tool under the name the agent gave it (claude-agent-acp's
	// mcp__dotty-robot__look, gemini-cli's mcp_dotty-robot_look, codex-acp's
	// mcp__dotty_robot/look: see NamespaceSep).
	Suffix string
	Args   map[string]any // the arguments
}

// Reply scripts the answer to a request.
type Reply struct {
	// Text is the assistant message's content; a streamed answer sends it
	// in deltas of about a word.
	Text string
	// Tool, when set, is called instead of answering Text while the
	// request offers a tool of that name (or suffix) and carries no result
	// for the call yet; the request that brings the result is answered
	// Text.
	Tool *ToolCall
	// Status is the HTTP status (0 is 200). A Chat Completions body is a
	// completion with Text whatever the status; the other APIs answer a
	// status of 400 or more with their error object, Text its message.
	Status int
	// Func, when set, answers the request instead of Text and Status.
	Func func(w http.ResponseWriter, r *http.Request)
	// Answer, when set, is the Text of each request, computed from its
	// prompt: a vision model describing the room a marker names.
	Answer func(Prompt) string
	// Delay holds the answer this long; a request whose context ends, or a
	// test that ends, first gets none.
	Delay time.Duration
	// Block holds the request, unanswered, until its context ends or the
	// test does (a model that never answers).
	Block bool
	// Stall, for a streamed answer, sends Text's deltas and then holds the
	// stream open, unfinished, until the request's context ends or the
	// test does (a model still generating when the user barges in).
	Stall bool
}

// Server is the fake.
type Server struct {
	*httptest.Server

	keep, keepLines int
	mu              sync.Mutex
	requests        []Request // the latest requests: keep to 2*keep of them
	first           int       // the index of requests[0]
	counts          map[string]int
	lines           []string // the latest prompt lines: keepLines to 2*keepLines
	firstLine       int      // the index of lines[0]
	reply           Reply
	audio           *Reply
	routes          []route
	arrived         chan struct{} // closed and replaced at every request
	stop            chan struct{}
	closing         sync.Once
	inFlight        atomic.Int64
}

// New starts a fake answering text with 200 and closes it when the test
// ends.
func New(t testing.TB, text string) *Server {
	t.Helper()
	s, err := Start(Options{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake on a loopback port; Close stops it.
func Start(o Options) (*Server, error) {
	if o.Keep < 0 || o.KeepLines < 0 {
		return nil, fmt.Errorf("llmtest: Options.Keep %d and Options.KeepLines %d may not be negative", o.Keep, o.KeepLines)
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen: %w", err)
	}
	s := &Server{keep: o.Keep, keepLines: o.KeepLines, counts: map[string]int{}, reply: Reply{Text: o.Text}, stop: make(chan struct{}), arrived: make(chan struct{})}
	s.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}}
	s.Server.Start()
	return s, nil
}

// Close releases held requests and stops the server. It may be called
// more than once.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.stop) // release held requests first
		s.Server.Close()
	})
}

// InFlight is the number of requests being answered: 0 when the fake is
// idle.
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

// Set scripts the answer to the requests from now on.
func (s *Server) Set(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = r
}

// route is a reply for the requests whose body holds marker.
type route struct {
	marker []byte
	reply  Reply
}

// SetFor scripts the answer to the requests whose body holds marker (a
// word of the conversation's own, so each conversation of an agent gets
// its own script), over Set's. When a body holds several markers, the one
// scripted last wins: a conversation's later turn carries its earlier
// ones.
func (s *Server) SetFor(marker string, r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes = append(s.routes, route{marker: []byte(marker), reply: r})
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

// Requests returns the latest requests (all of them until there are more
// than Options.Keep), oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests[max(0, len(s.requests)-s.keep):]...)
}

// Request returns the i-th request (from 0); it panics when there are not
// that many or it is no longer kept.
func (s *Server) Request(i int) Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < s.first {
		panic(fmt.Sprintf("llmtest: request %d is no longer kept (Options.Keep %d)", i, s.keep))
	}
	return s.requests[i-s.first]
}

// Count is the number of requests so far, kept or not.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first + len(s.requests)
}

// CountTo is the number of requests to path so far (OtherPaths: those to
// the paths past MaxPaths).
func (s *Server) CountTo(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// Lines returns the prompt lines recorded from index from on (0: the
// first) that are still kept, and the index after the last: a checker
// passes it back as the next from to scan each line once (next minus
// len(lines) past from: lines it came too late for). Nothing is recorded
// unless Options.KeepLines is set.
func (s *Server) Lines(from int) (lines []string, next int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next = s.firstLine + len(s.lines)
	from = max(from, s.firstLine, next-s.keepLines)
	return append([]string(nil), s.lines[min(from, next)-s.firstLine:]...), next
}

// ResultsOf returns the results of the call id carried by the requests
// from index from on, oldest first: by id, or by the name the call was
// made under where the API gives calls no id of the model's (Gemini).
func (s *Server) ResultsOf(from int, id string) []ToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]bool{}
	for _, r := range s.requests {
		if r.Called != nil && r.Called.ID == id {
			names[r.Called.Name] = true
		}
	}
	var out []ToolResult
	for _, r := range s.requests[min(max(from-s.first, 0), len(s.requests)):] {
		for _, res := range r.Results {
			if res.CallID == id || (r.API == Gemini && names[res.Name]) {
				out = append(out, res)
			}
		}
	}
	return out
}

// Wait returns the first request from index from on (0: the first) that
// match accepts, waiting up to d for it; ok is false when none came.
func (s *Server) Wait(from int, d time.Duration, match func(Request) bool) (req Request, ok bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for _, req := range s.requests[min(max(from-s.first, 0), len(s.requests)):] {
			if match(req) {
				s.mu.Unlock()
				return req, true
			}
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline.C:
			return Request{}, false
		case <-s.stop:
			return Request{}, false
		}
	}
}

// record keeps req, counts it and its prompt's lines, and returns its
// index and the reply that answers it. The logs are trimmed to their
// bound each time they reach twice it, so appending stays cheap.
func (s *Server) record(req Request, raw []byte, prompt string) (int, Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) >= 2*s.keep {
		drop := len(s.requests) - s.keep + 1
		s.requests = append(make([]Request, 0, 2*s.keep), s.requests[drop:]...)
		s.first += drop
	}
	s.requests = append(s.requests, req)
	key := req.Path
	if _, ok := s.counts[key]; !ok && len(s.counts) >= MaxPaths {
		key = OtherPaths
	}
	s.counts[key]++
	s.recordLinesLocked(prompt)
	s.notifyLocked()
	reply := s.reply
	if s.audio != nil && bytes.Contains(raw, []byte(`"input_audio"`)) {
		reply = *s.audio
	}
	for i := len(s.routes) - 1; i >= 0; i-- {
		if bytes.Contains(raw, s.routes[i].marker) {
			reply = s.routes[i].reply
			break
		}
	}
	return s.first + len(s.requests) - 1, reply
}

// recordLinesLocked keeps prompt's non-blank lines when asked to.
func (s *Server) recordLinesLocked(prompt string) {
	if s.keepLines == 0 {
		return
	}
	for line := range strings.Lines(prompt) {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if len(s.lines) >= 2*s.keepLines {
			s.firstLine += len(s.lines) - s.keepLines
			s.lines = append(make([]string, 0, 2*s.keepLines), s.lines[len(s.lines)-s.keepLines:]...)
		}
		s.lines = append(s.lines, line)
	}
}

// keptLocked is request i when it is still kept, else nil.
func (s *Server) keptLocked(i int) *Request {
	if i < s.first || i-s.first >= len(s.requests) {
		return nil
	}
	return &s.requests[i-s.first]
}

// called notes the tool call request i is answered with.
func (s *Server) called(i int, call *ToolCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.keptLocked(i); r != nil {
		r.Called = call
	}
}

// aborted marks request i as given up by its client.
func (s *Server) aborted(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.keptLocked(i); r != nil {
		r.Aborted = true
	}
	s.notifyLocked()
}

// hold keeps request i open until its client gives up (aborted) or the
// server stops.
func (s *Server) hold(r *http.Request, i int) {
	select {
	case <-r.Context().Done():
		s.aborted(i)
	case <-s.stop:
	}
}

func (s *Server) notifyLocked() {
	close(s.arrived)
	s.arrived = make(chan struct{})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	api := apiOf(r)
	req := Request{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body, API: api}
	var prompt string
	if api != "" {
		req.Stream = streamed(api, r, body)
		req.Tools, req.Results = toolsOf(api, body), resultsOf(api, body)
		prompt = promptOf(api, body)
	}
	i, reply := s.record(req, raw, prompt)
	if api == "" {
		http.NotFound(w, r)
		return
	}
	if reply.Block {
		s.hold(r, i)
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			s.aborted(i)
			return
		case <-s.stop:
			return
		}
	}
	if reply.Func != nil {
		reply.Func(w, r)
		return
	}
	if reply.Answer != nil {
		reply.Text = reply.Answer(Prompt{Text: prompt, Images: imagesOf(api, body)})
	}
	a := answerTo(i, req, reply, r)
	if a.call != nil {
		s.called(i, a.call)
	}
	if !req.Stream || a.status >= 400 {
		writeJSON(w, a.status, a.buffered(api))
		return
	}
	sw := newSSE(w, r)
	a.stream(api, sw)
	if sw.err != nil {
		s.aborted(i)
		return
	}
	if reply.Stall {
		s.hold(r, i)
		return
	}
	a.finish(api, sw)
	if sw.err != nil {
		s.aborted(i)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
