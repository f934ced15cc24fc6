package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
)

// sttFake is an OpenAI-compatible transcription server that checks and
// records what it receives.
type sttFake struct {
	*httptest.Server
	mu     sync.Mutex
	got    []sttRequest
	text   string
	status int
	stall  time.Duration
}

type sttRequest struct {
	path, auth, model, language, format, filename, ctype string
	wav                                                  []byte
}

func newSTT(t *testing.T) *sttFake {
	f := &sttFake{text: "what is a comet", status: 200}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req sttRequest
		req.path, req.auth = r.URL.Path, r.Header.Get("Authorization")
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			switch p.FormName() {
			case "file":
				req.wav, req.filename, req.ctype = b, p.FileName(), p.Header.Get("Content-Type")
			case "model":
				req.model = string(b)
			case "language":
				req.language = string(b)
			case "response_format":
				req.format = string(b)
			}
		}
		f.mu.Lock()
		f.got = append(f.got, req)
		text, status, stall := f.text, f.status, f.stall
		f.mu.Unlock()
		if stall > 0 {
			select {
			case <-time.After(stall):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"text":%q}`, text)
	}))
	t.Cleanup(f.Close)
	return f
}

// voiceFake records turns and answers a scripted reply.
type voiceFake struct {
	mu    sync.Mutex
	keys  []string
	texts []string
	reply string
	err   error
	stall bool
}

func (v *voiceFake) Reply(ctx context.Context, r voice.ReplyRequest) (string, error) {
	v.mu.Lock()
	v.keys, v.texts = append(v.keys, r.Key), append(v.texts, r.Content)
	reply, err, stall := v.reply, v.err, v.stall
	v.mu.Unlock()
	if stall {
		<-ctx.Done()
		return "😐 timeout fallback", fmt.Errorf("timed out: %w", ctx.Err())
	}
	return reply, err
}

type env struct {
	stt   *sttFake
	voice *voiceFake
	url   string
	dir   string
	// endRequests ends every request's ctx with a cause, as the bridge's
	// server does when its shutdown grace runs out.
	endRequests context.CancelCauseFunc
}

func newEnv(t *testing.T, edit func(*Config)) *env {
	t.Helper()
	e := &env{stt: newSTT(t), voice: &voiceFake{reply: "😊 A comet is a dirty snowball in space, friend!"}, dir: t.TempDir()}
	os.WriteFile(filepath.Join(e.dir, "dotty.md"), []byte("---\nname: dotty\n---\nYou are Dotty, a cheerful robot.\n"), 0o600)
	cfg := Config{Token: "tok", PersonasDir: e.dir, STT: STT{URL: e.stt.URL + "/v1/audio/transcriptions", Model: "whisper-1", APIKey: "sk-stt"},
		Voice: e.voice, Logger: hclog.NewNullLogger()}
	if edit != nil {
		edit(&cfg)
	}
	ech := echo.New()
	New(cfg).Routes(ech)
	e.url, e.endRequests = testkit.ServeEndable(t, ech)
	return e
}

var pcm3s = bytes.Repeat([]byte{0x01, 0x02}, 48000) // 3 s, 96 000 bytes

// post sends a firmware-shaped request over a raw connection and returns
// the raw response bytes, as the firmware reads them.
func (e *env) post(t *testing.T, body []byte, headers ...string) []byte {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := map[string]string{"Content-Type": "audio/L16;rate=16000;channels=1", "Authorization": "Bearer tok"}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST /v1/listen HTTP/1.1\r\nHost: %s\r\n", strings.TrimPrefix(e.url, "http://"))
	for k, v := range h {
		if v != "" {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&req, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	// A body over MaxBody is refused on its declared length, unread: sent,
	// it would still be arriving when the server closes, and the reset that
	// unread data causes can discard the answer before it is read.
	if len(body) <= MaxBody {
		req.Write(body)
	}
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(bufio.NewReader(conn))
	return raw
}

// firmware parses a response exactly as the firmware does:
// ok is false wherever the robot would show "post failed".
type reply struct {
	status        int
	text, emotion string
	ok            bool
}

func firmware(raw []byte) reply {
	var r reply
	if len(raw) > 2048 || !utf8.Valid(raw) {
		return r
	}
	head, body, found := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !found {
		return r
	}
	lines := strings.Split(string(head), "\r\n")
	f := strings.Fields(lines[0])
	if len(f) < 2 {
		return r
	}
	r.status, _ = strconv.Atoi(f[1])
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "content-length") {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			body = body[:min(n, len(body))]
		}
	}
	scan := func(key string) string {
		i := bytes.Index(body, []byte(`"`+key+`"`))
		if i < 0 {
			return ""
		}
		rest := bytes.TrimLeft(body[i+len(key)+2:], " ")
		if len(rest) == 0 || rest[0] != ':' {
			return ""
		}
		rest = bytes.TrimLeft(rest[1:], " ")
		if len(rest) == 0 || rest[0] != '"' {
			return ""
		}
		var out []byte
		for j := 1; j < len(rest); j++ {
			switch rest[j] {
			case '\\':
				out = append(out, rest[j])
				j++
				if j < len(rest) {
					out = append(out, rest[j])
				}
			case '"':
				return string(out)
			default:
				out = append(out, rest[j])
			}
		}
		return ""
	}
	r.text, r.emotion = scan("text"), scan("emotion")
	r.ok = r.status >= 200 && r.status < 300 && r.text != ""
	return r
}

func TestListenHappyPath(t *testing.T) {
	e := newEnv(t, nil)
	raw := e.post(t, pcm3s, "X-Session-Id", "dev-1", "X-Persona-Name", "dotty")
	r := firmware(raw)
	if !r.ok || r.text != "A comet is a dirty snowball in" || r.emotion != "happy" {
		t.Fatalf("robot shows %+v from %q", r, raw)
	}
	if !bytes.Contains(raw, []byte("Connection: close")) || len(raw) > 400 {
		t.Errorf("response %q", raw)
	}
	got := e.stt.got[0]
	if got.path != "/v1/audio/transcriptions" || got.auth != "Bearer sk-stt" || got.model != "whisper-1" || got.language != "en" ||
		got.format != "json" || got.filename != "audio.wav" || got.ctype != "audio/wav" {
		t.Errorf("STT request %+v", got)
	}
	want := WAV(pcm3s)
	if !bytes.Equal(got.wav, want) || string(got.wav[:4]) != "RIFF" || binary.LittleEndian.Uint32(got.wav[40:]) != 96000 ||
		binary.LittleEndian.Uint32(got.wav[24:]) != 16000 || binary.LittleEndian.Uint32(got.wav[4:]) != 36+96000 {
		t.Error("WAV header or data differ")
	}
	if e.voice.texts[0] != "[Context] You are Dotty, a cheerful robot.\n\n[User] what is a comet" || e.voice.keys[0] != "dev-1|dotty" {
		t.Errorf("turn %q key %q", e.voice.texts[0], e.voice.keys[0])
	}
}

func TestListenValidation(t *testing.T) {
	e := newEnv(t, nil)
	for _, tt := range []struct {
		name    string
		body    []byte
		headers []string
		status  int
		code    string
	}{
		{"no token", pcm3s, []string{"Authorization", ""}, 401, "unauthorized"},
		{"wrong token", pcm3s, []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"wrong type", pcm3s, []string{"Content-Type", "audio/wav"}, 415, "bad_content_type"},
		{"type with a longer name", pcm3s, []string{"Content-Type", "audio/L16x;rate=16000;channels=1"}, 415, "bad_content_type"},
		{"odd length", append(append([]byte{}, pcm3s...), 0), nil, 400, "audio_odd_length"},
		{"wrong rate", pcm3s, []string{"Content-Type", "audio/L16;rate=8000;channels=1"}, 415, "audio_rate_unsupported"},
		{"stereo", pcm3s, []string{"Content-Type", "audio/l16; rate=16000; channels=2"}, 415, "audio_channels_unsupported"},
		{"empty", nil, nil, 400, "audio_empty"},
		{"too small", make([]byte, 638), nil, 400, "audio_too_small"},
		{"too large", make([]byte, MaxBody+2), nil, 413, "audio_too_large"},
		{"persona traversal", pcm3s, []string{"X-Persona-Name", "../etc/passwd"}, 400, "persona_name_invalid"},
		{"persona slash", pcm3s, []string{"X-Persona-Name", "a/b"}, 400, "persona_name_invalid"},
		{"persona too long", pcm3s, []string{"X-Persona-Name", strings.Repeat("a", 65)}, 400, "persona_name_invalid"},
		{"persona missing", pcm3s, []string{"X-Persona-Name", "nobody"}, 404, "persona_missing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := e.post(t, tt.body, tt.headers...)
			r := firmware(raw)
			if r.status != tt.status || !bytes.Contains(raw, []byte(`"code":"`+tt.code+`"`)) || r.text == "" {
				t.Errorf("%d %q", r.status, raw)
			}
		})
	}
	if len(e.stt.got) != 0 || len(e.voice.keys) != 0 {
		t.Error("a refused request reached STT or the agent")
	}
	d := newEnv(t, func(c *Config) { c.DefaultPersona = "gone" })
	if r := firmware(d.post(t, pcm3s)); r.status != 500 {
		t.Errorf("missing default persona: %d", r.status)
	}
	open := newEnv(t, func(c *Config) { c.Token, c.AllowNoToken = "", true })
	if r := firmware(open.post(t, pcm3s, "Authorization", "")); !r.ok {
		t.Errorf("no-token mode refused: %+v", r)
	}
	served := DefaultConfig()
	served.STT.URL = "http://127.0.0.1:9/v1/audio/transcriptions"
	if err := served.Validate(); err == nil || !strings.Contains(err.Error(), "Token") {
		t.Errorf("an empty token without SIDECAR_ALLOW_NO_TOKEN validated: %v", err)
	}
}

func TestListenFailuresAnswer200(t *testing.T) {
	for _, tt := range []struct {
		name       string
		setup      func(e *env)
		text, code string
	}{
		{"blank transcript", func(e *env) { e.stt.text = "  " }, "didn't catch that, try again", "stt_timeout"},
		{"STT 400", func(e *env) { e.stt.status = 400 }, "hearing's wonky, try again", "stt_failed"},
		{"STT stalls", func(e *env) { e.stt.stall = time.Minute }, "didn't catch that, try again", "stt_timeout"},
		{"agent fails", func(e *env) { e.voice.err = errors.New("boom") }, "brain hiccup, try again", "llm_failed"},
		{"agent stalls", func(e *env) { e.voice.stall = true }, "thinking too hard, try again", "llm_timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.Deadline = 2 * time.Second; c.STT.Timeout = time.Second })
			tt.setup(e)
			start := time.Now()
			raw := e.post(t, pcm3s, "X-Session-Id", "s")
			r := firmware(raw)
			if !r.ok || r.status != 200 || r.text != tt.text || r.emotion != "sad" || !bytes.Contains(raw, []byte(`"code":"`+tt.code+`"`)) {
				t.Errorf("robot shows %+v from %q", r, raw)
			}
			// The code says which bound ended a stall; the time is printed.
			t.Logf("answered after %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

// While the bridge is stopping a new request gets the graceful 200
// "restarting" reply without reaching STT or the agent, and a turn the
// shutdown grace ends gets the same reply rather than a failure the robot
// would blame on its brain.
func TestListenWhileStopping(t *testing.T) {
	stopping := make(chan struct{})
	close(stopping)
	e := newEnv(t, func(c *Config) { c.Stopping = stopping })
	raw := e.post(t, pcm3s, "X-Session-Id", "s")
	if r := firmware(raw); !r.ok || r.status != 200 || r.text != "restarting, try again" || !bytes.Contains(raw, []byte(`"code":"shutting_down"`)) {
		t.Errorf("new request while stopping: robot shows %+v from %q", r, raw)
	}
	if len(e.stt.got) != 0 || len(e.voice.keys) != 0 {
		t.Error("a request refused while stopping reached STT or the agent")
	}

	e = newEnv(t, nil)
	e.voice.stall = true
	answer := make(chan []byte, 1)
	go func() { answer <- e.post(t, pcm3s, "X-Session-Id", "s") }()
	turning := func() bool {
		e.voice.mu.Lock()
		defer e.voice.mu.Unlock()
		return len(e.voice.keys) == 1
	}
	testkit.WaitFor(t, 10*time.Second, "the turn to reach the agent", turning)
	e.endRequests(httpapi.ErrShuttingDown)
	raw = testkit.Recv(t, 20*time.Second, answer, "no answer after the grace ended the turn")
	if r := firmware(raw); !r.ok || r.text != "restarting, try again" || !bytes.Contains(raw, []byte(`"code":"shutting_down"`)) {
		t.Errorf("turn ended by the shutdown grace: robot shows %+v from %q", r, raw)
	}
}

func TestReplyText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"😊 Hello there!", "Hello there!"},
		{"😮 He said \"wow\" \\ and\nleft", "He said 'wow' and left"},
		{"🤔 Größe café 漢字 ok", "Gre caf ok"},
		{"😆 " + strings.Repeat("word ", 20), "word word word word word word"},
		{"😐 Supercalifragilisticexpialidociousness", "Supercalifragilisticexpialidocio"},
	} {
		got := replyText(tt.in)
		if got != tt.want || len(got) > TextMax {
			t.Errorf("%q → %q, want %q", tt.in, got, tt.want)
		}
	}
	// The longest reply stays far under the firmware's 2 048 bytes.
	e := newEnv(t, nil)
	e.voice.reply = "😠 " + strings.Repeat("\"<&>\" ", 400)
	raw := e.post(t, pcm3s)
	if r := firmware(raw); !r.ok || len(raw) > 512 || r.emotion != "angry" {
		t.Errorf("%+v, %d bytes", r, len(raw))
	}
	e.voice.reply = "😊 漢字"
	if r := firmware(e.post(t, pcm3s)); r.text != "..." {
		t.Errorf("an all-non-ASCII reply shows %q", r.text)
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t, nil)
	resp, err := http.Get(e.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"status":"ok","providers":{"stt":"ready","llm":"ready"}}` {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

func TestValidSlug(t *testing.T) {
	for s, want := range map[string]bool{"dotty": true, "kid-mode_2": true, "": false, "a..b": false, `a\b`: false, "a\x01": false, "a\x7f": false, "é": true} {
		if ValidSlug(s) != want {
			t.Errorf("ValidSlug(%q) = %v", s, !want)
		}
	}
}

// busyBody is a request body the server's upload budget had no room for.
type busyBody struct{}

func (busyBody) Read([]byte) (int, error) { return 0, fmt.Errorf("waited: %w", httpapi.ErrBusy) }
func (busyBody) Close() error             { return nil }

// A recording the upload budget had no room for in time is answered in
// the firmware's envelope: 200 (only a 2xx reaches the user), Retry-After, the busy code.
func TestListenBusy(t *testing.T) {
	ech := echo.New()
	ech.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Request().Body = busyBody{}
			return next(c)
		}
	})
	New(Config{Token: "tok", Logger: hclog.NewNullLogger()}).Routes(ech)
	ts := httptest.NewServer(ech)
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/listen", bytes.NewReader(pcm3s))
	req.Header.Set("Content-Type", "audio/L16;rate=16000;channels=1")
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := `{"text":"too busy, try again","emotion":"neutral","error":{"code":"busy","stage":"system"}}`
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Retry-After") != "5" || string(b) != want {
		t.Errorf("busy: %d, Retry-After %q, %s; want 200, 5, %s", resp.StatusCode, resp.Header.Get("Retry-After"), b, want)
	}
}
