// Package llmtest is the fake model server for tests: the narrative model,
// the vision and audio models and Tier1's thinker call its OpenAI Chat
// Completions endpoint, and the real ACP agents of the end-to-end tests
// call the API their SDK speaks (wire.go): OpenAI Responses (codex-acp),
// Anthropic Messages (claude-agent-acp) and Gemini generateContent
// (gemini-cli), each buffered or streamed.
//
// It records every request and answers a scripted reply: text, or a call
// of a tool the request offers followed, once the request carries the
// tool's result, by text. Requests to a path that is none of those APIs
// are recorded and answered 404, so a client calling the wrong path fails
// as it would against the real service.
package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

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

	mu       sync.Mutex
	requests []Request
	reply    Reply
	audio    *Reply
	routes   []route
	arrived  chan struct{} // closed and replaced at every request
	stop     chan struct{}
}

// New starts a fake answering text with 200 and closes it when the test
// ends.
func New(t testing.TB, text string) *Server {
	t.Helper()
	s := &Server{reply: Reply{Text: text}, stop: make(chan struct{}), arrived: make(chan struct{})}
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
	for _, r := range s.requests[min(from, len(s.requests)):] {
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
		for i := from; i < len(s.requests); i++ {
			if match(s.requests[i]) {
				req := s.requests[i]
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

// record appends req and returns its index and the reply that answers it.
func (s *Server) record(req Request, raw []byte) (int, Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
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
	return len(s.requests) - 1, reply
}

// called notes the tool call request i is answered with.
func (s *Server) called(i int, call *ToolCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[i].Called = call
}

// aborted marks request i as given up by its client.
func (s *Server) aborted(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[i].Aborted = true
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
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	api := apiOf(r)
	req := Request{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body, API: api}
	if api != "" {
		req.Stream = streamed(api, r, body)
		req.Tools, req.Results = toolsOf(api, body), resultsOf(api, body)
	}
	i, reply := s.record(req, raw)
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
