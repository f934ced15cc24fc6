package vision

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/openai/openai-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// Model-visible and caller-visible strings, bridge.py's byte for byte:
// callers match on them.
const (
	RoomViewSentinel = "__ROOM_VIEW_V1__"
	NoOneInView      = "no one in view"
	OfflineText      = "ERROR: my camera is offline right now. Tell the user the vision system is unavailable and do not guess at what the photo shows."
	FailedText       = "ERROR: the vision service didn't respond. Tell the user you couldn't process the photo and do not guess at what it shows."
	AudioFallback    = "I couldn't quite hear that clearly."

	roomViewQuestion = "Describe the person you can see in one short sentence — approximate age range, hair, clothing, distinguishing features. If you cannot see a person, reply with exactly: no one in view. Do not guess names."
	kidSystem        = "You are describing a photo taken by a small robot's camera (low resolution). Describe what you see in simple, clear language suitable for a young child. Focus on objects, colors, and actions. Do NOT identify or name specific people. If the image contains anything inappropriate for young children, say only 'I see something I am not sure about' without further detail. If the image is blurry or unclear, describe what you can make out. Keep your description to 2-3 sentences."
	adultSystem      = "You are describing a photo taken by a small robot's camera (low resolution). Describe what you see clearly and concisely. Focus on objects, people, colors, and actions. If the image is blurry or unclear, describe what you can make out. Keep your description to 2-3 sentences."
	roomViewSystem   = "You are looking at a photo from a small family robot's camera. Reply in the EXACT format the user message requests. Identify the person ONLY by names from the list the user provides. Never invent names; never name anyone outside the list. If you are not confident or no match is clear, use the name 'unknown'. Keep the description to one short sentence. Read the person's apparent mood from face + posture only, choosing from a fixed vocabulary."
	audioSystem      = "You are listening to a short audio clip from a small family robot's microphone. Describe what you hear in 1–2 sentences. Note speech (paraphrase briefly, do not transcribe verbatim), music, and ambient sounds. Especially flag anything unusual — raised voices, distress, breaking glass, alarms, impacts, or sudden loud noises — at the start of your reply. If the clip is normal ambient sound or quiet conversation, say so briefly. Do not invent details you cannot hear."
)

// Routes mounts the vision and audio routes.
func (s *Service) Routes(e *echo.Echo) {
	e.POST("/api/vision/explain", s.explain)
	e.GET("/api/vision/latest/:device_id", s.latest)
	e.POST("/api/audio/explain", s.audioExplain)
}

// upload is a parsed multipart body: the file in memory, the question.
type upload struct {
	file        []byte
	hasFile     bool
	contentType string
	filename    string
	question    string
	hasQuestion bool
}

// multipartSlack is the room a body has beyond MaxUpload for the
// multipart framing and the question.
const multipartSlack = 64 << 10

// readUpload streams the multipart body into memory (never to disk),
// refusing more than MaxUpload bytes with 413 (unread when the declared
// length says so) and answering 503 when the server's upload budget has no
// room for it in time.
func (s *Service) readUpload(c echo.Context) (upload, error) {
	var u upload
	req := c.Request()
	mt, params, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return u, httpapi.Validation(httpapi.ValidationItem{Type: "missing", Loc: []any{"body", "file"}, Msg: "Field required", Input: nil})
	}
	limit := s.cfg.MaxUpload
	tooBig := httpapi.NewError(http.StatusRequestEntityTooLarge, fmt.Sprintf("upload over %d bytes", limit))
	if req.ContentLength > limit+multipartSlack {
		return u, tooBig
	}
	// failed answers a read error: 503 when the upload budget had no room,
	// 413 past the limit, else 400 with what.
	failed := func(err error, what string) error {
		var mbe *http.MaxBytesError
		switch {
		case errors.Is(err, httpapi.ErrBusy):
			return httpapi.Busy()
		case errors.As(err, &mbe):
			return tooBig
		}
		return httpapi.NewError(http.StatusBadRequest, what)
	}
	body := http.MaxBytesReader(c.Response(), req.Body, limit+multipartSlack)
	r := multipart.NewReader(body, params["boundary"])
	for {
		part, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return u, failed(err, "malformed multipart body: "+err.Error())
		}
		switch part.FormName() {
		case "file":
			// The declared length bounds the file: one buffer of its size,
			// not io.ReadAll's doublings, so a photo costs what the upload
			// budget reserved for it.
			b, err := httpapi.ReadAllSized(io.LimitReader(part, limit+1), min(req.ContentLength, limit+1))
			if err == nil && int64(len(b)) > limit {
				return u, tooBig
			}
			if err != nil {
				return u, failed(err, "could not read the upload: "+err.Error())
			}
			u.file, u.hasFile, u.contentType, u.filename = b, true, part.Header.Get("Content-Type"), part.FileName()
		case "question":
			b, err := io.ReadAll(io.LimitReader(part, 64<<10))
			if err != nil {
				return u, failed(err, "could not read the question")
			}
			u.question, u.hasQuestion = string(b), true
		default:
			_, _ = io.Copy(io.Discard, part)
		}
	}
	if !u.hasFile {
		return u, httpapi.Validation(httpapi.ValidationItem{Type: "missing", Loc: []any{"body", "file"}, Msg: "Field required", Input: nil})
	}
	return u, nil
}

// deviceOf is the upload's device-id header ("unknown" when absent),
// validated like every device id a caller names.
func deviceOf(c echo.Context) (string, error) {
	d := c.Request().Header.Get("device-id")
	if d == "" {
		return "unknown", nil
	}
	if item, ok := perception.CheckDeviceID(d, "header"); !ok {
		return "", httpapi.Validation(item)
	}
	return d, nil
}

func observe(o prometheus.Observer, start time.Time) {
	if o != nil {
		o.Observe(time.Since(start).Seconds())
	}
}

// readAsk reads an explain request: the device, the upload, and its
// question (def when the form has none). The caller's question is outside
// text in the model's prompt: it is made one safe line (prompttext.Line);
// the room-view sentinel is kept exactly as sent.
func (s *Service) readAsk(c echo.Context, def string) (string, upload, string, error) {
	device, err := deviceOf(c)
	if err != nil {
		return "", upload{}, "", err
	}
	u, err := s.readUpload(c)
	if err != nil {
		return "", upload{}, "", err
	}
	if u.hasQuestion {
		def = u.question
		if def != RoomViewSentinel {
			def = prompttext.Line(def, prompttext.Question)
		}
	}
	return device, u, def, nil
}

// explain is POST /api/vision/explain.
func (s *Service) explain(c echo.Context) error {
	start := time.Now()
	device, u, question, err := s.readAsk(c, "What do you see?")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var desc string
	var roomID *string
	if question == RoomViewSentinel && s.roster() != nil {
		desc, roomID = s.roomView(ctx, device, u.file)
		question = RoomViewSentinel
	} else {
		if question == RoomViewSentinel {
			question = roomViewQuestion
		}
		desc = s.describe(ctx, question, u.file)
	}
	now := s.clock.Now()
	s.storeImage(device, entry{desc: desc, at: now, roomID: roomID, question: question, source: "explain"})
	s.keepPhoto(device, Photo{JPEG: u.file, Description: desc, At: now})
	s.announceMatch(device, roomID, now)
	s.log.Info("photo described", "device", device, "bytes", len(u.file), "room_match", roomID != nil, "elapsed", time.Since(start))
	observe(s.cfg.VisionDuration, start)
	return httpapi.WriteJSON(c, http.StatusOK, map[string]string{"description": desc})
}

// describe is the description path: the failure strings stand in for a
// description.
func (s *Service) describe(ctx context.Context, question string, jpeg []byte) string {
	system := adultSystem
	if s.cfg.KidMode != nil && s.cfg.KidMode() {
		system = kidSystem
	}
	answer, err := s.vision.ask(ctx, system, []openai.ChatCompletionContentPartUnionParam{imagePart(jpeg), openai.TextContentPart(question)})
	switch {
	case errors.Is(err, errOffline):
		s.log.Warn("vision model has no API key (VLM_API_KEY, VISION_API_KEY, OPENROUTER_API_KEY)")
		return OfflineText
	case err != nil:
		s.log.Warn("vision model failed", "error", err)
		return FailedText
	}
	return answer
}

// latest is GET /api/vision/latest/{device_id}: drop the current result,
// wait up to LongPoll for the next one.
func (s *Service) latest(c echo.Context) error {
	device, err := url.PathUnescape(c.Param("device_id"))
	if err != nil {
		device = c.Param("device_id")
	}
	if item, ok := perception.CheckDeviceID(device, "path"); !ok {
		return httpapi.Validation(item)
	}
	w := make(chan bool, 1)
	s.mu.Lock()
	if s.nWait >= s.cfg.MaxWaiters {
		s.mu.Unlock()
		return httpapi.NewError(http.StatusServiceUnavailable,
			fmt.Sprintf("too many vision long-polls waiting (limit %d); try again later", s.cfg.MaxWaiters))
	}
	s.images.Remove(device)
	s.waiters[device] = append(s.waiters[device], w)
	s.nWait++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		ws := slices.DeleteFunc(s.waiters[device], func(x chan bool) bool { return x == w })
		if len(ws) == 0 {
			delete(s.waiters, device)
		} else {
			s.waiters[device] = ws
		}
		s.nWait--
		s.mu.Unlock()
	}()
	timer := s.clock.NewTimer(s.cfg.LongPoll)
	defer timer.Stop()
	select {
	case result := <-w:
		if !result {
			return c.JSON(http.StatusNotFound, map[string]string{"error": "no vision result in time"})
		}
	case <-timer.Chan():
		return c.JSON(http.StatusNotFound, map[string]string{"error": "no vision result in time"})
	case <-c.Request().Context().Done():
		if httpapi.ShuttingDown(c.Request().Context()) {
			// The bridge is stopping: the poll's documented miss, not a
			// cut connection.
			return c.JSON(http.StatusNotFound, map[string]string{"error": "no vision result in time"})
		}
		return nil
	}
	s.mu.Lock()
	e, ok := s.images.Get(device)
	s.mu.Unlock()
	if !ok {
		return c.JSON(http.StatusInternalServerError, map[string]string{"error": "vision processing failed"})
	}
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		Description string  `json:"description"`
		RoomMatch   *string `json:"room_match_person_id"`
	}{e.desc, e.roomID})
}

// Waiters reports how many long-polls wait for device (for tests and /health).
func (s *Cache) Waiters(device string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters[device])
}

// roster returns the members with an appearance, or nil.
func (s *Service) roster() []perception.Person {
	if s.cfg.Household == nil {
		return nil
	}
	var out []perception.Person
	for _, p := range s.cfg.Household.People() {
		if strings.TrimSpace(p.Appearance) != "" {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b perception.Person) int {
		return strings.Compare(strings.ToLower(a.DisplayName), strings.ToLower(b.DisplayName))
	})
	return out
}

// Moods are the room view's mood vocabulary.
var Moods = []string{"engaged", "tired", "excited", "distressed", "neutral"}

var roomReply = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?is)^\s*DESC:\s*(?P<desc>.+?)\s*\|\s*NAME:\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]*)\s*(?:\|\s*MOOD:\s*(?P<mood>[A-Za-z]+)\s*)?[.!?]?\s*$`)
})

// ParseRoomView reads a "DESC: … | NAME: … | MOOD: …" reply: the
// description ("" for none), the lower-cased name ("" for none) and a mood
// from the vocabulary ("" otherwise).
func ParseRoomView(reply string) (desc, name, mood string) {
	reply = text.Strip(reply)
	if reply == "" || strings.Contains(strings.ToLower(reply), NoOneInView) {
		return "", "", ""
	}
	m := roomReply().FindStringSubmatch(reply)
	if m == nil {
		return reply, "", ""
	}
	desc, name, mood = m[1], strings.ToLower(m[2]), strings.ToLower(m[3])
	if !slices.Contains(Moods, mood) {
		mood = ""
	}
	return desc, name, mood
}

// appearanceCap is a roster member's appearance in the room view's prompt
// (bridge.py's 77 + "...").
var appearanceCap = prompttext.Cap{Runes: 80, Ellipsis: "..."}

// roomPrompt is the room view's user text for roster; each member's name
// and appearance stand on their own line as prompttext.Line makes them.
func roomPrompt(roster []perception.Person) string {
	var lines, names []string
	for _, p := range roster {
		name := prompttext.Line(p.DisplayName, prompttext.Name)
		lines = append(lines, "  "+name+": "+prompttext.Line(p.Appearance, appearanceCap))
		names = append(names, name)
	}
	return "Look at this photo and do THREE things in one reply.\n\n" +
		"1. Describe the person in ONE short sentence — approximate age range, hair, clothing, distinguishing features.\n" +
		"2. If the person clearly matches one of these family members, give that exact name. Otherwise reply with the name 'unknown'.\n" +
		"3. Read the person's apparent mood — pick exactly one of: engaged, tired, excited, distressed, neutral.\n\n" +
		"Family:\n" + strings.Join(lines, "\n") + "\n\n" +
		"Reply on a SINGLE line in this exact format:\n" +
		"DESC: <one sentence> | NAME: <" + strings.Join(names, "|") + "|unknown> | MOOD: <engaged|tired|excited|distressed|neutral>\n\n" +
		"If you cannot see a person at all, reply with exactly: no one in view\n" +
		"Do not invent names. Do not add commentary."
}

// roomView is the roster path: gates, the VLM, the parser, mood into
// state; it returns the description and the roster id matched, if any
// (see announceMatch).
func (s *Service) roomView(ctx context.Context, device string, jpeg []byte) (string, *string) {
	now := s.clock.Now()
	wall := float64(now.UnixNano()) / 1e9
	if s.cfg.Perception != nil {
		skip := false
		s.cfg.Perception.States().Update(device, func(d *perception.DeviceState) {
			state := d.State()
			kickoff := state == "talk" && d.LastStateChangeT != nil && wall-*d.LastStateChangeT < s.cfg.TalkKickoffGrace.Seconds()
			talking := (state == "talk" || (d.Listening != nil && *d.Listening)) && !kickoff
			dancing := d.DanceActive != nil && *d.DanceActive
			cooling := d.LastRoomViewCaptureT != nil && wall-*d.LastRoomViewCaptureT < s.cfg.RoomViewCooldown.Seconds()
			if dancing || talking || cooling {
				skip = true
				return
			}
			d.LastRoomViewCaptureT = &wall
		})
		if skip {
			s.log.Debug("room view skipped (talking, dancing or cooling down)", "device", device)
			return NoOneInView, nil
		}
	}
	roster := s.roster()
	reply, err := s.vision.ask(ctx, roomViewSystem, []openai.ChatCompletionContentPartUnionParam{imagePart(jpeg), openai.TextContentPart(roomPrompt(roster))})
	if err != nil {
		s.log.Warn("room view model failed", "error", err)
		return NoOneInView, nil
	}
	desc, name, mood := ParseRoomView(reply)
	if desc == "" {
		desc = NoOneInView
	}
	if mood != "" && s.cfg.Perception != nil {
		s.cfg.Perception.States().Update(device, func(d *perception.DeviceState) {
			d.FaceMood, d.FaceMoodT = &mood, &wall
		})
	}
	var id *string
	if name != "" && name != "unknown" {
		for _, p := range roster {
			if p.ID == name {
				id = &p.ID
				break
			}
		}
	}
	return desc, id
}

// announceMatch broadcasts a room view's match as face_recognized. A match
// from a photo is a hint, not a face in front of the camera: as in
// bridge.py it is only broadcast (the named greeting, the greeter, scene
// synthesis and the recent ring hear it), never written into the
// device's state, so the prompt, the scene and the identity pip do not
// name someone the camera may not be showing. It comes after the photo's
// description is stored, as in bridge.py, so a scene made on it sees the
// description.
func (s *Service) announceMatch(device string, id *string, at time.Time) {
	if id == nil || s.cfg.Perception == nil {
		return
	}
	s.cfg.Perception.Broadcast(perception.Event{DeviceID: device, TS: float64(at.UnixNano()) / 1e9, Name: "face_recognized",
		Data: perception.DataOf(map[string]any{"identity": *id, "source": "room_view"})})
}

// audioFormats maps content types to input_audio formats.
var audioFormats = map[string]string{
	"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
	"audio/mpeg": "mp3", "audio/mp3": "mp3",
	"audio/ogg": "opus", "audio/opus": "opus",
	"audio/flac": "flac", "audio/x-flac": "flac",
}

// AudioFormat detects the clip's format from its content type, then its
// file name, defaulting to wav.
func AudioFormat(contentType, filename string) string {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		if f, ok := audioFormats[strings.ToLower(mt)]; ok {
			return f
		}
	}
	switch strings.ToLower(path.Ext(filename)) {
	case ".mp3":
		return "mp3"
	case ".ogg", ".opus":
		return "opus"
	case ".flac":
		return "flac"
	}
	return "wav"
}

// audioExplain is POST /api/audio/explain.
func (s *Service) audioExplain(c echo.Context) error {
	start := time.Now()
	device, u, question, err := s.readAsk(c, "Describe what you hear.")
	if err != nil {
		return err
	}
	format := AudioFormat(u.contentType, u.filename)
	desc, err := s.audio.ask(c.Request().Context(), audioSystem, []openai.ChatCompletionContentPartUnionParam{
		openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{
			Data: base64.StdEncoding.EncodeToString(u.file), Format: format}),
		openai.TextContentPart(question),
	})
	if err != nil || desc == "" {
		s.log.Warn("audio caption failed", "error", err, "format", format)
		desc = AudioFallback
	}
	s.storeSound(device, entry{desc: desc, at: s.clock.Now(), question: question, source: "audio_explain"})
	if s.cfg.Perception != nil {
		s.cfg.Perception.Broadcast(perception.Event{DeviceID: device, TS: float64(s.clock.Now().UnixNano()) / 1e9,
			Name: "audio_captioned", Data: perception.DataOf(map[string]any{"source": "audio_explain", "preview": text.Truncate(desc, text.Cut{Max: 80})})})
	}
	observe(s.cfg.AudioDuration, start)
	return httpapi.WriteJSON(c, http.StatusOK, map[string]string{"description": desc})
}
