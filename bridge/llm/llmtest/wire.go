package llmtest

// The wire formats, written from the APIs' references and checked against
// the parsers the agents ship (codex-rs's Responses SSE reader, the
// Anthropic TypeScript SDK's message stream, @google/genai's
// streamGenerateContent reader and gemini-cli's stream validation).

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The APIs a request can speak (Request.API).
const (
	// ChatCompletions is OpenAI's Chat Completions: POST …/chat/completions;
	// streamed as data-only SSE chunks ending in "[DONE]".
	ChatCompletions = "chat.completions"
	// Responses is OpenAI's Responses API: POST …/responses; streamed as
	// named SSE events ending in response.completed.
	Responses = "responses"
	// Messages is Anthropic's Messages API: POST …/messages; streamed as
	// named SSE events from message_start to message_stop.
	Messages = "messages"
	// Gemini is the Gemini API: POST …/models/{model}:generateContent, or
	// :streamGenerateContent?alt=sse streamed as data-only SSE responses
	// whose last carries the finish reason.
	Gemini = "gemini"
)

// NamespaceSep joins a Responses namespace tool's name and the name of a
// tool inside it in Request.Tools (codex-acp offers an MCP server's tools
// as the namespace mcp__<server>, "mcp__dotty_robot/look"); a call of
// such a tool is answered as a function_call with that namespace.
const NamespaceSep = "/"

// apiOf is the API r's path selects, "" for none.
func apiOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return ChatCompletions
	case strings.HasSuffix(p, "/responses"):
		return Responses
	case strings.HasSuffix(p, "/messages"):
		return Messages
	case strings.HasSuffix(p, ":generateContent"), strings.HasSuffix(p, ":streamGenerateContent"):
		return Gemini
	}
	return ""
}

// streamed reports whether the request asks for a streamed answer.
func streamed(api string, r *http.Request, body map[string]any) bool {
	if api == Gemini {
		return strings.HasSuffix(r.URL.Path, ":streamGenerateContent") && r.URL.Query().Get("alt") == "sse"
	}
	return body["stream"] == true
}

// toolsOf lists the names of the tools a request offers.
func toolsOf(api string, body map[string]any) []string {
	var names []string
	for _, t := range list(body["tools"]) {
		tool := obj(t)
		switch api {
		case ChatCompletions:
			names = append(names, str(obj(tool["function"])["name"]))
		case Responses, Messages:
			if api == Responses && tool["type"] == "namespace" {
				for _, sub := range list(tool["tools"]) {
					names = append(names, str(tool["name"])+NamespaceSep+str(obj(sub)["name"]))
				}
				continue
			}
			names = append(names, str(tool["name"]))
		case Gemini:
			for _, d := range list(tool["functionDeclarations"]) {
				names = append(names, str(obj(d)["name"]))
			}
		}
	}
	return slices.DeleteFunc(names, func(n string) bool { return n == "" })
}

// resultsOf lists the tool results a request carries.
func resultsOf(api string, body map[string]any) []ToolResult {
	var out []ToolResult
	switch api {
	case ChatCompletions:
		for _, m := range list(body["messages"]) {
			if msg := obj(m); msg["role"] == "tool" {
				out = append(out, ToolResult{CallID: str(msg["tool_call_id"]), Output: textOf(msg["content"])})
			}
		}
	case Responses:
		for _, it := range list(body["input"]) {
			if item := obj(it); item["type"] == "function_call_output" || item["type"] == "custom_tool_call_output" {
				out = append(out, ToolResult{CallID: str(item["call_id"]), Output: textOf(item["output"])})
			}
		}
	case Messages:
		for _, m := range list(body["messages"]) {
			for _, b := range list(obj(m)["content"]) {
				if block := obj(b); block["type"] == "tool_result" {
					out = append(out, ToolResult{CallID: str(block["tool_use_id"]), Output: textOf(block["content"]), Error: block["is_error"] == true})
				}
			}
		}
	case Gemini:
		for _, c := range list(body["contents"]) {
			for _, p := range list(obj(c)["parts"]) {
				fr := obj(obj(p)["functionResponse"])
				if fr == nil {
					continue
				}
				res := ToolResult{CallID: str(fr["id"]), Name: str(fr["name"])}
				resp := obj(fr["response"])
				if e, ok := resp["error"]; ok {
					res.Output, res.Error = str(e), true
				} else if o, ok := resp["output"].(string); ok {
					res.Output = o
				} else {
					b, _ := json.Marshal(resp)
					res.Output = string(b)
				}
				out = append(out, res)
			}
		}
	}
	return out
}

// promptOf is the texts of a request's system prompt or instructions and
// messages, one per line, oldest first.
func promptOf(api string, body map[string]any) string {
	var texts []string
	switch api {
	case ChatCompletions:
		for _, m := range list(body["messages"]) {
			texts = append(texts, textOf(obj(m)["content"]))
		}
	case Responses:
		texts = append(texts, str(body["instructions"]), str(body["input"]))
		for _, it := range list(body["input"]) {
			texts = append(texts, textOf(obj(it)["content"]))
		}
	case Messages:
		texts = append(texts, textOf(body["system"]))
		for _, m := range list(body["messages"]) {
			texts = append(texts, textOf(obj(m)["content"]))
		}
	case Gemini:
		texts = append(texts, textOf(obj(body["systemInstruction"])["parts"]))
		for _, c := range list(body["contents"]) {
			texts = append(texts, textOf(obj(c)["parts"]))
		}
	}
	return strings.Join(slices.DeleteFunc(texts, func(t string) bool { return t == "" }), "\n")
}

// imagesOf decodes the base64 data URLs of a Chat Completions request's
// image_url parts (what the vision model is sent).
func imagesOf(api string, body map[string]any) [][]byte {
	if api != ChatCompletions {
		return nil
	}
	var out [][]byte
	for _, m := range list(body["messages"]) {
		for _, p := range list(obj(m)["content"]) {
			url := str(obj(obj(p)["image_url"])["url"])
			_, data, ok := strings.Cut(url, ";base64,")
			if !ok || !strings.HasPrefix(url, "data:") {
				continue
			}
			if b, err := base64.StdEncoding.DecodeString(data); err == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// offered is t as a call of a tool in tools (t with the name it matched by
// its Suffix), nil when tools offer none of that name.
func offered(t *ToolCall, tools []string) *ToolCall {
	if t == nil {
		return nil
	}
	if t.Name != "" {
		if slices.Contains(tools, t.Name) {
			return t
		}
		return nil
	}
	for _, name := range tools {
		if rest, ok := strings.CutSuffix(name, t.Suffix); ok && t.Suffix != "" && (rest == "" || strings.ContainsRune("_./:", rune(rest[len(rest)-1]))) {
			call := *t
			call.Name = name
			return &call
		}
	}
	return nil
}

// answered reports whether results hold call's result: by id, or by name
// where the API carries one (Gemini, whose calls carry no id: the one on
// its results is the agent's own).
func answered(results []ToolResult, call *ToolCall) bool {
	return slices.ContainsFunc(results, func(r ToolResult) bool {
		return r.CallID == call.ID || r.Name == call.Name
	})
}

// answer is what one request is answered.
type answer struct {
	status int
	id     string // the response's id
	model  string
	words  []string  // the text's deltas (none when call is set)
	call   *ToolCall // the tool call made instead of text
}

func answerTo(i int, req Request, reply Reply, r *http.Request) answer {
	a := answer{status: reply.Status, id: fmt.Sprintf("%d", i+1), model: str(req.Body["model"])}
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if req.API == Gemini {
		// …/models/{model}:generateContent
		a.model, _, _ = strings.Cut(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:], ":")
	}
	if call := offered(reply.Tool, req.Tools); call != nil && !answered(req.Results, call) {
		a.call = call
	} else {
		a.words = strings.SplitAfter(reply.Text, " ")
	}
	return a
}

func (a answer) text() string { return strings.Join(a.words, "") }

func (a answer) args() string {
	b, _ := json.Marshal(a.call.Args)
	if a.call.Args == nil {
		b = []byte("{}")
	}
	return string(b)
}

// buffered is the whole answer as one JSON body.
func (a answer) buffered(api string) any {
	if a.status >= 400 && api != ChatCompletions {
		return errorBody(api, a.status, a.text())
	}
	switch api {
	case Responses:
		return a.responsesObject("completed")
	case Messages:
		return a.messagesObject()
	case Gemini:
		return a.geminiChunk(a.geminiParts(a.text()), true)
	}
	msg := map[string]any{"role": "assistant", "content": a.text()}
	finish := "stop"
	if a.call != nil {
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": a.call.ID, "type": "function",
			"function": map[string]any{"name": a.call.Name, "arguments": a.args()}}}
		finish = "tool_calls"
	}
	return map[string]any{"id": "chatcmpl-" + a.id, "object": "chat.completion", "created": 0, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}}, "usage": a.openAIUsage()}
}

// stream sends the answer's start and its content; finish ends it. A
// stalled answer is sent up to, not including, finish.
func (a answer) stream(api string, s *sse) {
	switch api {
	case ChatCompletions:
		if a.call != nil {
			s.data(a.chatChunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0,
				"id": a.call.ID, "type": "function", "function": map[string]any{"name": a.call.Name, "arguments": a.args()}}}}, nil))
			return
		}
		for i, w := range a.words {
			delta := map[string]any{"content": w}
			if i == 0 {
				delta["role"] = "assistant"
			}
			s.data(a.chatChunk(delta, nil))
		}
	case Responses:
		s.event("response.created", map[string]any{"response": a.responsesObject("in_progress")})
		if a.call != nil {
			item := a.responsesItem(false)
			s.event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
			s.event("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": 0, "delta": a.args()})
			s.event("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": 0, "arguments": a.args()})
			s.event("response.output_item.done", map[string]any{"output_index": 0, "item": a.responsesItem(true)})
			return
		}
		item := a.responsesItem(false)
		s.event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		s.event("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, w := range a.words {
			s.event("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": w})
		}
	case Messages:
		msg := a.messagesObject()
		msg["content"], msg["stop_reason"] = []any{}, nil
		s.event("message_start", map[string]any{"message": msg})
		if a.call != nil {
			s.event("content_block_start", map[string]any{"index": 0,
				"content_block": map[string]any{"type": "tool_use", "id": a.call.ID, "name": a.call.Name, "input": map[string]any{}}})
			s.event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": a.args()}})
			s.event("content_block_stop", map[string]any{"index": 0})
			return
		}
		s.event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, w := range a.words {
			s.event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": w}})
		}
	case Gemini:
		// The last delta goes with the finish reason: gemini-cli refuses a
		// stream whose final response has no content.
		for i := 0; a.call == nil && i < len(a.words)-1; i++ {
			s.data(a.geminiChunk(a.geminiParts(a.words[i]), false))
		}
	}
}

func (a answer) finish(api string, s *sse) {
	switch api {
	case ChatCompletions:
		reason := "stop"
		if a.call != nil {
			reason = "tool_calls"
		}
		s.data(a.chatChunk(map[string]any{}, reason))
		s.raw("data: [DONE]\n\n")
	case Responses:
		if a.call == nil {
			item := a.responsesItem(true)
			text := a.text()
			s.event("response.output_text.done", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0, "text": text})
			s.event("response.content_part.done", map[string]any{"item_id": item["id"], "output_index": 0, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
			s.event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
		}
		s.event("response.completed", map[string]any{"response": a.responsesObject("completed")})
	case Messages:
		reason := "end_turn"
		if a.call == nil {
			s.event("content_block_stop", map[string]any{"index": 0})
		} else {
			reason = "tool_use"
		}
		s.event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": reason, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": max(1, len(a.words))}})
		s.event("message_stop", map[string]any{})
	case Gemini:
		last := ""
		if a.call == nil {
			last = a.words[len(a.words)-1]
		}
		s.data(a.geminiChunk(a.geminiParts(last), true))
	}
}

func (a answer) openAIUsage() map[string]any {
	return map[string]any{"prompt_tokens": 1, "completion_tokens": len(a.words), "total_tokens": 1 + len(a.words)}
}

func (a answer) chatChunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{"id": "chatcmpl-" + a.id, "object": "chat.completion.chunk", "created": 0, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
}

// responsesItem is the answer's one output item: a message, or a
// function call; in progress until done.
func (a answer) responsesItem(done bool) map[string]any {
	status := "in_progress"
	if done {
		status = "completed"
	}
	if a.call != nil {
		args := ""
		if done {
			args = a.args()
		}
		item := map[string]any{"type": "function_call", "id": "fc_" + a.id, "status": status,
			"call_id": a.call.ID, "name": a.call.Name, "arguments": args}
		if ns, name, ok := strings.Cut(a.call.Name, NamespaceSep); ok {
			item["namespace"], item["name"] = ns, name
		}
		return item
	}
	content := []any{}
	if done {
		content = []any{map[string]any{"type": "output_text", "text": a.text(), "annotations": []any{}}}
	}
	return map[string]any{"type": "message", "id": "msg_" + a.id, "status": status, "role": "assistant", "content": content}
}

func (a answer) responsesObject(status string) map[string]any {
	o := map[string]any{"id": "resp_" + a.id, "object": "response", "created_at": 0, "status": status, "model": a.model, "output": []any{}}
	if status == "completed" {
		o["output"] = []any{a.responsesItem(true)}
		o["usage"] = map[string]any{"input_tokens": 1, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": len(a.words), "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 1 + len(a.words)}
	}
	return o
}

func (a answer) messagesObject() map[string]any {
	content := []any{map[string]any{"type": "text", "text": a.text()}}
	reason := "end_turn"
	if a.call != nil {
		args := a.call.Args
		if args == nil {
			args = map[string]any{}
		}
		content = []any{map[string]any{"type": "tool_use", "id": a.call.ID, "name": a.call.Name, "input": args}}
		reason = "tool_use"
	}
	return map[string]any{"id": "msg_" + a.id, "type": "message", "role": "assistant", "model": a.model,
		"content": content, "stop_reason": reason, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": max(1, len(a.words))}}
}

// geminiParts is text as parts, or the call when there is one. Gemini's
// function calls carry no id: gemini-cli makes its own.
func (a answer) geminiParts(text string) []any {
	if a.call != nil {
		args := a.call.Args
		if args == nil {
			args = map[string]any{}
		}
		return []any{map[string]any{"functionCall": map[string]any{"name": a.call.Name, "args": args}}}
	}
	return []any{map[string]any{"text": text}}
}

func (a answer) geminiChunk(parts []any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": a.model, "responseId": "resp_" + a.id}
	if last {
		cand["finishReason"] = "STOP"
		out["usageMetadata"] = map[string]any{"promptTokenCount": 1, "candidatesTokenCount": max(1, len(a.words)), "totalTokenCount": 1 + max(1, len(a.words))}
	}
	return out
}

// errorBody is api's error object for a failed request.
func errorBody(api string, status int, msg string) any {
	switch api {
	case Messages:
		kind := "api_error"
		switch status {
		case http.StatusBadRequest:
			kind = "invalid_request_error"
		case http.StatusUnauthorized:
			kind = "authentication_error"
		case http.StatusTooManyRequests:
			kind = "rate_limit_error"
		case 529:
			kind = "overloaded_error"
		}
		return map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}
	case Gemini:
		return map[string]any{"error": map[string]any{"code": status, "message": msg, "status": strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_"))}}
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "code": nil}}
}

// sse writes server-sent events and notes the first failure: a write
// error or the client gone.
type sse struct {
	w   http.ResponseWriter
	r   *http.Request
	err error
}

func newSSE(w http.ResponseWriter, r *http.Request) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, r: r}
}

// event writes a named event whose data is v with its "type" set to name.
func (s *sse) event(name string, v map[string]any) {
	v["type"] = name
	b, _ := json.Marshal(v)
	s.raw("event: " + name + "\ndata: " + string(b) + "\n\n")
}

// data writes an unnamed event.
func (s *sse) data(v any) {
	b, _ := json.Marshal(v)
	s.raw("data: " + string(b) + "\n\n")
}

func (s *sse) raw(frame string) {
	if s.err != nil {
		return
	}
	if s.err = s.r.Context().Err(); s.err != nil {
		return
	}
	if _, s.err = s.w.Write([]byte(frame)); s.err == nil {
		s.err = http.NewResponseController(s.w).Flush()
	}
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// textOf is a content field's text: a string, or the text of its parts.
func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	for _, p := range list(v) {
		b.WriteString(str(obj(p)["text"]))
	}
	return b.String()
}
