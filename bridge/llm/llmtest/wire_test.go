package llmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// frame is one server-sent event.
type frame struct {
	event string
	data  map[string]any
	done  bool // "data: [DONE]"
}

// sseFrames reads every event of a streamed answer.
func sseFrames(t *testing.T, body io.Reader) []frame {
	t.Helper()
	var out []frame
	var cur frame
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != nil || cur.done {
				out = append(out, cur)
			}
			cur = frame{}
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case line == "data: [DONE]":
			cur.done = true
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
		default:
			t.Fatalf("line %q", line)
		}
	}
	return out
}

// decoded is what a client of the API makes of a streamed answer.
type decoded struct {
	text     string
	call     *ToolCall
	finished bool // the API's end of answer came
}

func decodeStream(t *testing.T, api string, frames []frame) decoded {
	t.Helper()
	var d decoded
	args := ""
	for _, f := range frames {
		switch api {
		case ChatCompletions:
			if f.done {
				d.finished = true
				continue
			}
			ch := obj(list(f.data["choices"])[0])
			delta := obj(ch["delta"])
			d.text += str(delta["content"])
			for _, tc := range list(delta["tool_calls"]) {
				fn := obj(obj(tc)["function"])
				d.call = &ToolCall{ID: str(obj(tc)["id"]), Name: str(fn["name"])}
				args += str(fn["arguments"])
			}
		case Responses:
			if f.data["type"] != f.event {
				t.Errorf("event %q carries type %v", f.event, f.data["type"])
			}
			switch f.event {
			case "response.output_text.delta":
				d.text += str(f.data["delta"])
			case "response.output_item.done":
				if item := obj(f.data["item"]); item["type"] == "function_call" {
					d.call = &ToolCall{ID: str(item["call_id"]), Name: str(item["name"])}
					if ns := str(item["namespace"]); ns != "" {
						d.call.Name = ns + NamespaceSep + d.call.Name
					}
					args = str(item["arguments"])
				}
			case "response.completed":
				d.finished = str(obj(f.data["response"])["id"]) != ""
			}
		case Messages:
			switch f.event {
			case "content_block_start":
				if b := obj(f.data["content_block"]); b["type"] == "tool_use" {
					d.call = &ToolCall{ID: str(b["id"]), Name: str(b["name"])}
				}
			case "content_block_delta":
				delta := obj(f.data["delta"])
				d.text += str(delta["text"])
				args += str(delta["partial_json"])
			case "message_stop":
				d.finished = true
			}
		case Gemini:
			cand := obj(list(f.data["candidates"])[0])
			for _, p := range list(obj(cand["content"])["parts"]) {
				d.text += str(obj(p)["text"])
				if fc := obj(obj(p)["functionCall"]); fc != nil {
					d.call = &ToolCall{Name: str(fc["name"]), Args: obj(fc["args"])}
				}
			}
			d.finished = cand["finishReason"] == "STOP"
		}
	}
	if d.call != nil && args != "" {
		if err := json.Unmarshal([]byte(args), &d.call.Args); err != nil {
			t.Errorf("arguments %q: %v", args, err)
		}
	}
	return d
}

// apiRequest is one request of api: its path and a body offering the
// tool "touch", carrying result (the tool's output) when not empty.
func apiRequest(api string, stream bool, result string) (string, string) {
	var body map[string]any
	path := ""
	switch api {
	case ChatCompletions:
		path = "/v1/chat/completions"
		msgs := []any{map[string]any{"role": "user", "content": "hi"}}
		if result != "" {
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": "c1", "content": result})
		}
		body = map[string]any{"model": "m", "stream": stream, "messages": msgs,
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "touch"}}}}
	case Responses:
		path = "/v1/responses"
		input := []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hi"}}}}
		if result != "" {
			input = append(input, map[string]any{"type": "function_call_output", "call_id": "c1", "output": result})
		}
		body = map[string]any{"model": "m", "stream": stream, "input": input, "tools": []any{map[string]any{"type": "function", "name": "touch"}}}
	case Messages:
		path = "/v1/messages"
		msgs := []any{map[string]any{"role": "user", "content": "hi"}}
		if result != "" {
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "c1", "content": []any{map[string]any{"type": "text", "text": result}}}}})
		}
		body = map[string]any{"model": "m", "stream": stream, "messages": msgs, "tools": []any{map[string]any{"name": "touch"}}}
	case Gemini:
		path = "/v1beta/models/g:generateContent"
		if stream {
			path = "/v1beta/models/g:streamGenerateContent?alt=sse"
		}
		contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}
		if result != "" {
			contents = append(contents, map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
				"id": "agent-own-id", "name": "touch", "response": map[string]any{"output": result}}}}})
		}
		body = map[string]any{"contents": contents, "tools": []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "touch"}}}}}
	}
	b, _ := json.Marshal(body)
	return path, string(b)
}

var apis = []string{ChatCompletions, Responses, Messages, Gemini}

// Every API, streamed: the text in deltas, the tool called while its
// result is missing, then the text; each request recorded with its tools
// and results.
func TestStreamedAPIs(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			s := New(t, "")
			s.Set(Reply{Text: "the file is made", Tool: &ToolCall{ID: "c1", Name: "touch", Args: map[string]any{"path": "a.txt"}}})
			path, body := apiRequest(api, true, "")
			resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("content type %q", ct)
			}
			d := decodeStream(t, api, sseFrames(t, resp.Body))
			resp.Body.Close()
			if !d.finished || d.text != "" || d.call == nil || d.call.Name != "touch" || d.call.Args["path"] != "a.txt" ||
				(api != Gemini && d.call.ID != "c1") || (api == Gemini && d.call.ID != "") {
				t.Errorf("call: %+v %+v", d, d.call)
			}

			path, body = apiRequest(api, true, "made it")
			resp, err = http.Post(s.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			frames := sseFrames(t, resp.Body)
			resp.Body.Close()
			if d := decodeStream(t, api, frames); !d.finished || d.text != "the file is made" || d.call != nil {
				t.Errorf("after the result: %+v", d)
			}
			if api != Gemini && len(frames) < 5 {
				t.Errorf("%d frames: the text is not in deltas", len(frames))
			}
			r := s.Request(1)
			if r.API != api || !r.Stream || len(r.Tools) != 1 || r.Tools[0] != "touch" || len(r.Results) != 1 || r.Results[0].Output != "made it" {
				t.Errorf("recorded %+v", r)
			}
			if want := "c1"; api == Gemini {
				if r.Results[0].Name != "touch" || r.Results[0].CallID != "agent-own-id" {
					t.Errorf("gemini result %+v", r.Results[0])
				}
			} else if r.Results[0].CallID != want {
				t.Errorf("result %+v", r.Results[0])
			}
		})
	}
}

// Every API, buffered: one JSON body with the call, then with the text;
// an error status gets the API's error object.
func TestBufferedAPIs(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			s := New(t, "")
			s.Set(Reply{Text: "done", Tool: &ToolCall{ID: "c1", Name: "touch"}})
			get := func(result string) map[string]any {
				path, body := apiRequest(api, false, result)
				resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out map[string]any
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			call, text := get(""), get("ok")
			var gotCall, gotText string
			switch api {
			case ChatCompletions:
				gotCall = str(obj(obj(list(obj(obj(list(call["choices"])[0])["message"])["tool_calls"])[0])["function"])["name"])
				gotText = str(obj(obj(list(text["choices"])[0])["message"])["content"])
			case Responses:
				gotCall = str(obj(list(call["output"])[0])["name"])
				gotText = str(obj(list(obj(list(text["output"])[0])["content"])[0])["text"])
			case Messages:
				gotCall = str(obj(list(call["content"])[0])["name"])
				gotText = str(obj(list(text["content"])[0])["text"])
			case Gemini:
				part := func(m map[string]any) map[string]any {
					return obj(list(obj(obj(list(m["candidates"])[0])["content"])["parts"])[0])
				}
				gotCall = str(obj(part(call)["functionCall"])["name"])
				gotText = str(part(text)["text"])
			}
			if gotCall != "touch" || gotText != "done" {
				t.Errorf("call %q text %q: %v / %v", gotCall, gotText, call, text)
			}
			s.Set(Reply{Status: 529, Text: "overloaded"})
			path, body := apiRequest(api, true, "")
			resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 529 || !strings.Contains(string(b), "overloaded") || (api != ChatCompletions && !strings.Contains(string(b), `"error"`)) {
				t.Errorf("error answer %d %s", resp.StatusCode, b)
			}
		})
	}
}

// A stalled stream stays open after its deltas until the client leaves,
// which marks the request aborted.
func TestStallMarksAborted(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			s := New(t, "")
			s.Set(Reply{Text: "once upon a time", Stall: true})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			path, body := apiRequest(api, true, "")
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			text := ""
			for !strings.Contains(text, "upon") {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("stream ended before the deltas: %v", err)
				}
				text += line
			}
			if _, ok := s.Wait(0, 0, func(r Request) bool { return r.Aborted }); ok {
				t.Fatal("aborted while the client reads")
			}
			cancel()
			resp.Body.Close()
			if _, ok := s.Wait(0, 5*time.Second, func(r Request) bool { return r.Aborted }); !ok {
				t.Error("the client left, the request is not marked aborted")
			}
		})
	}
}

// SetFor: a request holding a marker gets that marker's reply, the last
// scripted winning; others get Set's.
func TestSetFor(t *testing.T) {
	s := New(t, "default")
	s.SetFor("w-one", Reply{Text: "first"})
	s.SetFor("w-two", Reply{Text: "second"})
	ctx := context.Background()
	chat := s.URL + "/v1/chat/completions"
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"nothing"}]}`:                                          "default",
		`{"messages":[{"role":"user","content":"w-one"}]}`:                                            "first",
		`{"messages":[{"role":"user","content":"w-one"},{"role":"user","content":"and then w-two"}]}`: "second",
	} {
		if _, text, err := post(ctx, chat, "", body); err != nil || text != want {
			t.Errorf("%s: %q %v, want %q", body, text, err, want)
		}
	}
}

// A call by suffix is made under the name the request offers (an MCP
// tool's name as the agent gives it), recorded as the request's Called,
// and ResultsOf finds its result: by id, or for Gemini by that name.
func TestToolBySuffix(t *testing.T) {
	for _, tt := range []struct {
		tools        []string
		suffix, want string
	}{
		{[]string{"mcp__dotty-robot__memory_lookup", "mcp__dotty-robot__look"}, "look", "mcp__dotty-robot__look"},
		{[]string{"mcp_dotty-robot_take_photo"}, "take_photo", "mcp_dotty-robot_take_photo"},
		{[]string{"mcp__dotty_robot/take_photo", "mcp__dotty_robot/look"}, "look", "mcp__dotty_robot/look"},
		{[]string{"look"}, "look", "look"},
		{[]string{"outlook", "memory_lookup"}, "look", ""},
		{[]string{"look"}, "", ""},
	} {
		got := ""
		if call := offered(&ToolCall{ID: "c1", Suffix: tt.suffix}, tt.tools); call != nil {
			got = call.Name
		}
		if got != tt.want {
			t.Errorf("%q in %q: called %q, want %q", tt.suffix, tt.tools, got, tt.want)
		}
	}
	const name = "mcp__dotty-robot__look"
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			s := New(t, "")
			s.Set(Reply{Text: "I looked left.", Tool: &ToolCall{ID: "c1", Suffix: "look", Args: map[string]any{"yaw": 60}}})
			send := func(result string) decoded {
				path, body := apiRequest(api, true, result)
				body = strings.ReplaceAll(body, `"touch"`, `"`+name+`"`)
				resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				return decodeStream(t, api, sseFrames(t, resp.Body))
			}
			if d := send(""); d.call == nil || d.call.Name != name || d.call.Args["yaw"] != 60.0 {
				t.Errorf("call %+v", d.call)
			}
			if d := send("turned to 60°"); d.call != nil || d.text != "I looked left." {
				t.Errorf("after the result: %+v", d)
			}
			if c := s.Request(0).Called; c == nil || c.Name != name || c.ID != "c1" || s.Request(1).Called != nil {
				t.Errorf("called %+v, then %+v", c, s.Request(1).Called)
			}
			if res := s.ResultsOf(0, "c1"); len(res) != 1 || res[0].Output != "turned to 60°" {
				t.Errorf("results %+v", res)
			}
			if res := s.ResultsOf(2, "c1"); len(res) != 0 {
				t.Errorf("results from 2: %+v", res)
			}
		})
	}
}

// A Responses namespace tool (codex-acp's MCP servers) lists its tools as
// namespace/name, and a call of one is a function_call carrying the
// namespace and the tool's own name.
func TestResponsesNamespace(t *testing.T) {
	s := New(t, "")
	s.Set(Reply{Text: "done", Tool: &ToolCall{ID: "c1", Suffix: "look"}})
	body := `{"model":"m","stream":true,"input":[],"tools":[{"type":"function","name":"exec_command"},` +
		`{"type":"namespace","name":"mcp__dotty_robot","tools":[{"type":"function","name":"take_photo"},{"type":"function","name":"look"}]}]}`
	resp, err := http.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := sseFrames(t, resp.Body)
	if d := decodeStream(t, Responses, frames); d.call == nil || d.call.Name != "mcp__dotty_robot/look" {
		t.Errorf("call %+v", d.call)
	}
	if got := s.Request(0).Tools; strings.Join(got, " ") != "exec_command mcp__dotty_robot/take_photo mcp__dotty_robot/look" {
		t.Errorf("tools %q", got)
	}
	for _, f := range frames {
		if item := obj(f.data["item"]); f.event == "response.output_item.done" && (item["namespace"] != "mcp__dotty_robot" || item["name"] != "look") {
			t.Errorf("item %v", item)
		}
	}
}
