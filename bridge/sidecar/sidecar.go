// Package sidecar serves the Stack-chan firmware's direct "agent sidecar"
// protocol (spec firmware-sidecar.md): POST /v1/listen takes raw 16 kHz
// mono PCM, transcribes it through an OpenAI-compatible
// /v1/audio/transcriptions endpoint, runs one voice turn through the same
// agent, session pool and memory as the xiaozhi path, and answers the
// firmware's {"text","emotion"} JSON, short, ASCII and well inside its
// 2 048-byte and 15 s limits. GET /healthz answers the firmware's tooling.
package sidecar

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/openai/openai-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
)

// Limits of the firmware protocol: 16 kHz mono 16-bit PCM, 20 ms to 30 s.
const (
	MaxBody  = 30*16000*2 + 1024 // 961 024 bytes
	MinBody  = 640               // one 20 ms frame
	TextMax  = 32                // the toast band
	Channel  = "stackchan"
	endpoint = "sidecar"
)

// Voice runs one voice turn (*voice.Voice).
type Voice interface {
	Reply(ctx context.Context, r voice.ReplyRequest) (string, error)
}

// Config configures the sidecar routes.
type Config struct {
	// Path is SIDECAR_PATH (/v1/listen).
	Path string
	// Token is SIDECAR_TOKEN; AllowNoToken (SIDECAR_ALLOW_NO_TOKEN) accepts
	// requests without one on a trusted LAN. Validate refuses an empty token
	// otherwise.
	Token        string
	AllowNoToken bool
	// PersonasDir holds <slug>.md persona files; DefaultPersona applies
	// without X-Persona-Name ("" means no persona).
	PersonasDir    string
	DefaultPersona string
	// Deadline bounds a request from its first byte (12 s, under the
	// firmware's 15 s).
	Deadline time.Duration
	// STT is the transcription endpoint.
	STT STT
	// Voice runs the turn.
	Voice Voice
	// Stopping is the server's Stopping channel: once it is closed a new
	// request gets the graceful "restarting" reply instead of a turn. Nil
	// never refuses.
	Stopping <-chan struct{}
	// Metrics; nil ones are not recorded.
	STTDuration prometheus.Observer
	Metrics     *Metrics // nil records nothing
	Logger      hclog.Logger
}

// STT is an OpenAI-compatible transcription endpoint.
type STT struct {
	// URL is STT_URL, the full .../audio/transcriptions URL.
	URL string
	// Model is STT_MODEL, APIKey STT_API_KEY, Language STT_LANGUAGE ("en").
	Model, APIKey, Language string
	// Timeout bounds one attempt (5 s).
	Timeout    time.Duration
	HTTPClient *http.Client
}

// DefaultConfig returns bridge.py's firmware path, deadline and
// transcription settings: the one place they are written. Its PersonasDir
// is the bridge's to give.
func DefaultConfig() Config {
	return Config{Path: "/v1/listen", Deadline: 12 * time.Second,
		STT: STT{Model: "whisper-1", Language: "en", Timeout: 5 * time.Second}}
}

// maxDeadline leaves the firmware's 15 s wait a second.
const maxDeadline = 14 * time.Second

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("Deadline"): the one range check of
// each field; the bridge's command line names the variable a value came
// from. With an STT URL (the sidecar served) the token is required unless
// AllowNoToken; a bad URL is reported alone.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("Path", strings.HasPrefix(c.Path, "/"), c.Path, "a path starting with /")
	errs.Check("STT.URL", c.STT.URL == "" || fieldcheck.HTTPURL(c.STT.URL), c.STT.URL, fieldcheck.WantHTTPURL)
	errs.Check("STT.Timeout", c.STT.Timeout > 0, c.STT.Timeout, "more than 0")
	errs.Check("Deadline", c.Deadline > 0, c.Deadline, "more than 0")
	if c.Deadline > maxDeadline {
		errs = append(errs, &fieldcheck.Error{Field: "Deadline", Value: c.Deadline, Want: "at most 14", Why: "the firmware gives up at 15"})
	}
	served := fieldcheck.HTTPURL(c.STT.URL) // a bad URL is its own error
	errs.Check("Token", !served || c.Token != "" || c.AllowNoToken, c.Token != "",
		"a token for the firmware sidecar (or SIDECAR_ALLOW_NO_TOKEN=1 on a trusted LAN)")
	return errs.Err()
}

// Handler serves the sidecar routes.
type Handler struct {
	cfg Config
	log hclog.Logger
	stt openai.Client
}

// New returns the handler.
func New(cfg Config) *Handler {
	def := DefaultConfig()
	fieldcheck.Fill(&cfg, def, "Path", "Deadline")
	fieldcheck.Fill(&cfg.STT, def.STT, "Language", "Timeout")
	cfg.Logger = cmp.Or(cfg.Logger, hclog.NewNullLogger())
	return &Handler{cfg: cfg, log: cfg.Logger, stt: llm.NewClient(cfg.STT.URL, cfg.STT.APIKey, cfg.STT.HTTPClient)}
}

// Routes mounts the listen path and /healthz.
func (h *Handler) Routes(e *echo.Echo) {
	e.POST(h.cfg.Path, h.listen)
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSONBlob(http.StatusOK, []byte(`{"status":"ok","providers":{"stt":"ready","llm":"ready"}}`))
	})
}

// failure is a canned reply: the firmware speaks text and shows emotion
// even for an error, so every failure has both.
type failure struct {
	status        int
	code, stage   string
	text, emotion string
}

var (
	failBadType     = failure{415, "bad_content_type", "audio", "wrong audio format", "neutral"}
	failBadLength   = failure{400, "bad_content_length", "audio", "bad content-length", "neutral"}
	failRate        = failure{415, "audio_rate_unsupported", "audio", "need 16kHz audio", "neutral"}
	failChannels    = failure{415, "audio_channels_unsupported", "audio", "need mono audio", "neutral"}
	failEmpty       = failure{400, "audio_empty", "audio", "no audio received", "neutral"}
	failSmall       = failure{400, "audio_too_small", "audio", "audio too short", "neutral"}
	failOddLength   = failure{400, "audio_odd_length", "audio", "audio is not whole 16-bit samples", "neutral"}
	failLarge       = failure{413, "audio_too_large", "audio", "audio too long", "neutral"}
	failPersonaName = failure{400, "persona_name_invalid", "system", "invalid persona name", "neutral"}
	failPersona404  = failure{404, "persona_missing", "system", "persona missing", "neutral"}
	failPersona500  = failure{500, "persona_missing", "system", "persona missing", "neutral"}
	failSTTTimeout  = failure{200, "stt_timeout", "stt", "didn't catch that, try again", "sad"}
	failSTT         = failure{200, "stt_failed", "stt", "hearing's wonky, try again", "sad"}
	failLLMTimeout  = failure{200, "llm_timeout", "llm", "thinking too hard, try again", "sad"}
	failLLM         = failure{200, "llm_failed", "llm", "brain hiccup, try again", "sad"}
	failUnauth      = failure{401, "unauthorized", "system", "unauthorized", "neutral"}
	// failStopping: the bridge is shutting down; a 200, as only a 2xx
	// reply reaches the user (the firmware shows "post failed" otherwise).
	failStopping = failure{200, "shutting_down", "system", "restarting, try again", "sad"}
	// failBusy is the Go bridge's own: the upload budget had no room for
	// the recording before its deadline (with a Retry-After). A 200, like
	// failStopping, so the robot says it instead of "post failed".
	failBusy = failure{200, "busy", "system", "too busy, try again", "neutral"}
)

// listen is POST /v1/listen.
func (h *Handler) listen(c echo.Context) error {
	start := time.Now()
	req := c.Request()
	ctx, cancel := context.WithTimeout(req.Context(), h.cfg.Deadline)
	defer cancel()
	rid := uuid.NewString()
	if !h.authorised(req) {
		c.Response().Header().Set("WWW-Authenticate", "Bearer")
		return h.fail(c, rid, failUnauth, start)
	}
	if httpapi.RefuseWhileStopping(h.cfg.Stopping) != nil {
		return h.fail(c, rid, failStopping, start)
	}
	if f, ok := checkContentType(req.Header.Get("Content-Type")); !ok {
		return h.fail(c, rid, f, start)
	}
	if cl := req.Header.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		switch {
		case err != nil || n < 0:
			return h.fail(c, rid, failBadLength, start)
		case n > MaxBody:
			return h.fail(c, rid, failLarge, start)
		}
	}
	// One buffer of the declared size: the recording costs what the upload
	// budget reserved for it.
	pcm, err := httpapi.ReadAllSized(io.LimitReader(req.Body, MaxBody+1), min(req.ContentLength, MaxBody+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, httpapi.ErrBusy):
		c.Response().Header().Set("Retry-After", httpapi.RetryAfter)
		return h.fail(c, rid, failBusy, start)
	case errors.As(err, &mbe):
		return h.fail(c, rid, failLarge, start)
	case err != nil:
		return h.fail(c, rid, failEmpty, start)
	case len(pcm) > MaxBody:
		return h.fail(c, rid, failLarge, start)
	case len(pcm) == 0:
		return h.fail(c, rid, failEmpty, start)
	case len(pcm) < MinBody:
		return h.fail(c, rid, failSmall, start)
	case len(pcm)%2 != 0:
		// 16-bit samples come in byte pairs; an odd count is a truncated
		// or foreign body, and would shift every sample after it.
		return h.fail(c, rid, failOddLength, start)
	}
	persona, slug, f, ok := h.persona(req.Header.Get("X-Persona-Name"))
	if !ok {
		return h.fail(c, rid, f, start)
	}
	session := strings.TrimSpace(req.Header.Get("X-Session-Id"))

	sttStart := time.Now()
	transcript, f, ok := h.transcribe(ctx, pcm)
	if h.cfg.STTDuration != nil {
		h.cfg.STTDuration.Observe(time.Since(sttStart).Seconds())
	}
	if !ok {
		if httpapi.ShuttingDown(ctx) {
			f = failStopping
		}
		return h.fail(c, rid, f, start)
	}
	content := transcript
	if persona != "" {
		content = "[Context] " + persona + "\n\n[User] " + transcript
	}
	// The turn gets what is left, minus time to write the reply.
	tctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var tcancel context.CancelFunc
		tctx, tcancel = context.WithDeadline(ctx, dl.Add(-500*time.Millisecond))
		defer tcancel()
	}
	key := session + "|" + slug // memory per (device, persona)
	if session == "" {
		key = "sidecar-" + rid // no session: no memory across requests
	}
	reply, err := h.cfg.Voice.Reply(tctx, voice.ReplyRequest{Endpoint: endpoint, Key: key, SessionID: session, Channel: Channel, Content: content})
	if err != nil {
		switch {
		case httpapi.ShuttingDown(tctx):
			return h.fail(c, rid, failStopping, start)
		case errors.Is(tctx.Err(), context.DeadlineExceeded):
			return h.fail(c, rid, failLLMTimeout, start)
		}
		return h.fail(c, rid, failLLM, start)
	}
	emotion := emoji.FirmwareEmotion(reply)
	spoken := replyText(reply)
	if spoken == "" {
		spoken = "..."
	}
	h.log.Info("sidecar turn", "request", rid, "session", session, "persona", slug, "transcript_len", len(transcript),
		"emotion", emotion, "elapsed", time.Since(start))
	return write(c, http.StatusOK, spoken, emotion, nil)
}

func (h *Handler) authorised(r *http.Request) bool {
	if h.cfg.Token == "" {
		return h.cfg.AllowNoToken
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(h.cfg.Token)) == 1
}

// checkContentType checks the declared audio format before the body is read.
func checkContentType(v string) (failure, bool) {
	mt, params, err := mime.ParseMediaType(v)
	if err != nil {
		// The firmware's value parses; be lenient with spacing variants.
		mt, params = strings.ToLower(strings.TrimSpace(strings.SplitN(v, ";", 2)[0])), map[string]string{}
		for _, p := range strings.Split(v, ";")[1:] {
			if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok {
				params[strings.ToLower(k)] = strings.TrimSpace(val)
			}
		}
	}
	// The media type itself, not a prefix: "audio/L16x" is another format.
	if strings.ToLower(mt) != "audio/l16" {
		return failBadType, false
	}
	if r, ok := params["rate"]; ok && r != "16000" {
		return failRate, false
	}
	if ch, ok := params["channels"]; ok && ch != "1" {
		return failChannels, false
	}
	return failure{}, true
}

// ValidSlug applies the firmware's persona-name rules: the name becomes a
// file name, so nothing that could leave the personas directory.
func ValidSlug(s string) bool {
	if s == "" || len(s) > 64 || strings.ContainsAny(s, `/\`) || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// persona reads the persona text for the header (or the default),
// re-read every request.
func (h *Handler) persona(header string) (prompt, slug string, f failure, ok bool) {
	slug = strings.TrimSpace(header)
	fromHeader := slug != ""
	if !fromHeader {
		slug = h.cfg.DefaultPersona
		if slug == "" {
			return "", "", failure{}, true
		}
	}
	if !ValidSlug(slug) {
		if fromHeader {
			return "", "", failPersonaName, false
		}
		return "", "", failPersona500, false
	}
	// The slug comes from the firmware's header: read through an os.Root so
	// no symlink in the personas directory can lead the read outside it.
	b, err := readIn(h.cfg.PersonasDir, slug+".md")
	if err != nil {
		if fromHeader {
			return "", "", failPersona404, false
		}
		return "", "", failPersona500, false
	}
	return strings.TrimSpace(stripFrontMatter(string(b))), slug, failure{}, true
}

// stripFrontMatter drops a leading "---" … "---" block (kept verbatim when
// unterminated).
func stripFrontMatter(s string) string {
	t := strings.TrimLeft(s, "\ufeff")
	if !strings.HasPrefix(t, "---") {
		return s
	}
	lines := strings.SplitAfter(t, "\n")
	if strings.TrimSpace(lines[0]) != "---" {
		return s
	}
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			return strings.Join(lines[i+1:], "")
		}
	}
	return s
}

// transcribe sends the PCM as WAV (one retry on a network error or 5xx
// when at least 4 s remain). A blank transcript is a stt_timeout reply.
func (h *Handler) transcribe(ctx context.Context, pcm []byte) (string, failure, bool) {
	wav := WAV(pcm)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, h.cfg.STT.Timeout)
		resp, err := h.stt.Audio.Transcriptions.New(actx, openai.AudioTranscriptionNewParams{
			File:           openai.File(bytes.NewReader(wav), "audio.wav", "audio/wav"),
			Model:          openai.AudioModel(h.cfg.STT.Model),
			Language:       openai.String(h.cfg.STT.Language),
			ResponseFormat: openai.AudioResponseFormatJSON,
			Temperature:    openai.Float(0),
		})
		timedOut := actx.Err() != nil
		cancel()
		if err == nil {
			heard := strings.TrimSpace(resp.Text)
			if heard == "" {
				return "", failSTTTimeout, false
			}
			return heard, failure{}, true
		}
		h.log.Warn("speech-to-text failed", "attempt", attempt, "error", err)
		if ctx.Err() != nil || timedOut {
			return "", failSTTTimeout, false
		}
		var apiErr *openai.Error
		retryable := !errors.As(err, &apiErr) || apiErr.StatusCode >= 500
		dl, _ := ctx.Deadline()
		if attempt >= 2 || !retryable || time.Until(dl) < 4*time.Second {
			return "", failSTT, false
		}
	}
}

// WAV wraps 16 kHz mono s16le PCM in a 44-byte RIFF header.
func WAV(pcm []byte) []byte {
	out := make([]byte, 44+len(pcm))
	copy(out[0:], "RIFF")
	binary.LittleEndian.PutUint32(out[4:], uint32(36+len(pcm))) // #nosec G115 -- len(pcm) ≤ MaxBody (under 1 MiB)
	copy(out[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(out[16:], 16)
	binary.LittleEndian.PutUint16(out[20:], 1)
	binary.LittleEndian.PutUint16(out[22:], 1)
	binary.LittleEndian.PutUint32(out[24:], 16000)
	binary.LittleEndian.PutUint32(out[28:], 32000)
	binary.LittleEndian.PutUint16(out[32:], 2)
	binary.LittleEndian.PutUint16(out[34:], 16)
	copy(out[36:], "data")
	binary.LittleEndian.PutUint32(out[40:], uint32(len(pcm))) // #nosec G115 -- len(pcm) ≤ MaxBody (under 1 MiB)
	copy(out[44:], pcm)
	return out
}

// stripLeadingEmoji removes the reply's leading emoji and whitespace.
func stripLeadingEmoji(s string) string {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	for _, e := range emoji.Allowed {
		if rest, ok := strings.CutPrefix(s, e); ok {
			return strings.TrimLeftFunc(rest, unicode.IsSpace)
		}
	}
	return s
}

// Sanitize keeps printable ASCII: `"` becomes `'`, `\` and other
// characters are dropped, whitespace runs become one space.
func Sanitize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case r == '"':
			r = '\''
		case r == '\\' || r < 0x20 || r > 0x7e:
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// replyText is the reply as the firmware shows it: no leading emoji,
// printable ASCII (Sanitize), at most TextMax characters, cut at the last
// space when there is one in the second half.
func replyText(reply string) string {
	return text.Truncate(Sanitize(stripLeadingEmoji(reply)), text.Cut{Max: TextMax, Bytes: true, AtSpace: true,
		Trim: func(r rune) bool { return strings.ContainsRune(" ,;:-", r) }})
}

func (h *Handler) fail(c echo.Context, rid string, f failure, start time.Time) error {
	if h.cfg.Metrics != nil {
		h.cfg.Metrics.Failures.WithLabelValues(f.stage).Inc()
	}
	h.log.Warn("sidecar request failed", "request", rid, "code", f.code, "stage", f.stage, "status", f.status, "elapsed", time.Since(start))
	return write(c, f.status, f.text, f.emotion, &f)
}

// write sends the firmware's reply: text first, then emotion, then error;
// Content-Length set, Connection: close, no HTML escaping.
func write(c echo.Context, status int, reply, emotion string, f *failure) error {
	var b bytes.Buffer
	b.WriteString(`{"text":"`)
	b.WriteString(reply) // Sanitize leaves nothing to escape
	b.WriteString(`","emotion":"`)
	b.WriteString(emotion)
	b.WriteByte('"')
	if f != nil {
		fmt.Fprintf(&b, `,"error":{"code":"%s","stage":"%s"}`, f.code, f.stage)
	}
	b.WriteByte('}')
	h := c.Response().Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	h.Set("Connection", "close")
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(b.Bytes())
	return err
}

// readIn reads name inside dir, refusing any path that leaves it.
func readIn(dir, name string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(name)
}
