package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
)

// Controls changes what admin owns, through the same functions as the
// /admin routes (*admin.Handler).
type Controls interface {
	SetKidMode(ctx context.Context, on bool, device string) (admin.ModeChange, error)
	SetSmartMode(ctx context.Context, on bool, device string) (admin.ModeChange, error)
	SetRobotState(ctx context.Context, state, device string) error
	SmartModels() (off, on string)
}

// Modes reads the stored modes (*admin.Modes).
type Modes interface {
	KidMode() bool
	SmartMode() bool
}

// Robot is what the dashboard asks of xiaozhi (*xiaozhi.Client).
type Robot interface {
	Enabled() bool
	InjectText(ctx context.Context, deviceID, text string) error
	TakePhoto(ctx context.Context, deviceID, question string) error
	Songs(ctx context.Context) ([]string, error)
	PlayAsset(ctx context.Context, deviceID, asset string) (xiaozhi.Response, error)
	Devices(ctx context.Context) ([]string, error)
}

// Limits and texts of the actions, bridge.py's.
const (
	// MaxSay bounds the Say and story texts, in characters.
	MaxSay = 500
	// replyWait is how long an action that makes the robot speak waits
	// for the reply to show it.
	replyWait = 8 * time.Second
	// noReply is shown when the reply did not come within replyWait.
	noReply = "Sent — no reply in 8s."
	// danceText is what the Dance button makes the robot hear.
	danceText = "do a dance and sing a song"
	// photoQuestion is the question of a photo taken from the dashboard.
	photoQuestion = "What do you see?"
)

// faceNames are the mood buttons' names for the nine reply emoji; 😠 is
// "war" when kid mode is off.
var faceNames = map[string]string{
	"😊": "happy", "😆": "laughing", "😢": "sad", "😮": "surprised", "🤔": "thinking",
	"😠": "angry", "😐": "neutral", "😍": "loving", "😴": "sleepy",
}

// songExt are the song files play-song accepts.
var songExt = []string{".opus", ".ogg", ".wav", ".mp3"}

// controlChars are C0 controls and DEL: never sent to speech.
var controlChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\x00-\x1f\x7f]+`) })

// actionResult is what every action answers on success.
type actionResult struct {
	OK bool `json:"ok"`
	// Sent is what the robot was asked, for the page's "you said" line.
	Sent string `json:"sent,omitempty"`
	// Response is the robot's reply, or noReply.
	Response string `json:"response,omitempty"`
	// Extra fields of some actions.
	Enabled      *bool `json:"enabled,omitempty"`
	DevicePushed *bool `json:"device_pushed,omitempty"`
	// Warning is set when the change was stored but the robot did not
	// take it (it catches up at its next change), or the agent's model
	// could not follow smart mode.
	Warning string `json:"warning,omitempty"`
	Model   string `json:"model,omitempty"`
	State   string `json:"state,omitempty"`
}

// actions mounts the POST /ui/api/* actions and their reads.
func (u *UI) actions(g *echo.Group) {
	g.GET("/api/status", u.status)
	g.GET("/api/songs", u.songs)
	g.GET("/api/photos", u.photos)
	g.GET("/api/events", u.recentEvents)
	g.GET("/api/photo", u.photo)
	g.GET("/api/memory", u.memory)
	for p, h := range map[string]echo.HandlerFunc{
		"/api/kid-mode": u.kidMode, "/api/smart-mode": u.smartMode, "/api/state": u.setState,
		"/api/mood": u.mood, "/api/say": u.say, "/api/story": u.story, "/api/dance": u.dance,
		"/api/play-song": u.playSong, "/api/take-photo": u.takePhoto,
		"/api/memory/approve": u.approveMemory, "/api/memory/redact": u.redactMemory,
	} {
		// The group's Access.Private refuses another site's page (403);
		// the body must be declared JSON, which such a page cannot send
		// without asking this server first (415).
		g.POST(p, h, httpapi.RequireJSON)
	}
}

// robotError turns a failed robot call into the reason the page shows.
func robotError(err error) error {
	var se *xiaozhi.StatusError
	switch {
	case errors.Is(err, xiaozhi.ErrDisabled):
		return httpapi.NewError(http.StatusServiceUnavailable, "xiaozhi is not configured (XIAOZHI_HOST is empty)")
	case errors.Is(err, xiaozhi.ErrNoDevice):
		return httpapi.NewError(http.StatusServiceUnavailable, "Dotty isn't connected right now — try again in a few seconds.")
	case errors.Is(err, context.DeadlineExceeded):
		return httpapi.NewError(http.StatusGatewayTimeout, "xiaozhi did not answer in time")
	case errors.As(err, &se):
		return httpapi.NewError(http.StatusBadGateway, fmt.Sprintf("xiaozhi answered HTTP %d: %s", se.Status, se.Body))
	case errors.Is(err, admin.ErrNoRobot):
		return httpapi.NewError(http.StatusServiceUnavailable, "xiaozhi is not configured (XIAOZHI_HOST is empty)")
	default:
		return httpapi.NewError(http.StatusBadGateway, "xiaozhi unreachable: "+err.Error())
	}
}

// reason is robotError's text for err.
func reason(err error) string {
	var apiErr *httpapi.APIError
	if errors.As(robotError(err), &apiErr) {
		if s, ok := apiErr.Detail.(string); ok {
			return s
		}
	}
	return err.Error()
}

// unavailable is the answer of an action whose dependency is not wired.
func unavailable(what string) error {
	return httpapi.NewError(http.StatusServiceUnavailable, what+" unavailable")
}

func (u *UI) kidMode(c echo.Context) error   { return u.setMode(c, u.cfg.Controls.SetKidMode) }
func (u *UI) smartMode(c echo.Context) error { return u.setMode(c, u.cfg.Controls.SetSmartMode) }

// setMode is the body of both toggles: {enabled, device_id?}.
func (u *UI) setMode(c echo.Context, set func(context.Context, bool, string) (admin.ModeChange, error)) error {
	if u.cfg.Controls == nil {
		return unavailable("mode control")
	}
	m, err := admin.Toggle(c, 4<<10, set)
	if err != nil {
		return err
	}
	res := actionResult{OK: true, Enabled: &m.Enabled, DevicePushed: &m.DevicePushed, Model: m.Model}
	var warnings []string
	if m.PushErr != nil {
		warnings = append(warnings, "Saved, but the robot did not take it: "+reason(m.PushErr))
	}
	if w := m.ModelWarning(); w != "" {
		warnings = append(warnings, w)
	}
	res.Warning = strings.Join(warnings, "; ")
	return httpapi.WriteJSON(c, http.StatusOK, res)
}

// setState is POST /ui/api/state: {state, device_id?}.
func (u *UI) setState(c echo.Context) error {
	if u.cfg.Controls == nil {
		return unavailable("robot state")
	}
	st, device, err := admin.StateRequest(c.Request().Body, 4<<10)
	if err != nil {
		return err
	}
	err = u.cfg.Controls.SetRobotState(c.Request().Context(), st, device)
	if errors.Is(err, admin.ErrUnknownState) {
		return httpapi.NewError(http.StatusBadRequest, err.Error())
	}
	if err != nil {
		return robotError(err)
	}
	pushed := true
	return httpapi.WriteJSON(c, http.StatusOK, actionResult{OK: true, State: st, DevicePushed: &pushed})
}

// mood is POST /ui/api/mood: {emoji}, one of the nine.
func (u *UI) mood(c echo.Context) error {
	var e string
	if err := httpapi.BindFields(c.Request().Body, 4<<10, func(b *httpapi.Binder) { e = b.String("emoji") }); err != nil {
		return err
	}
	name, ok := faceNames[e]
	if !ok {
		return httpapi.NewError(http.StatusBadRequest, "Unknown emoji.")
	}
	if e == "😠" && u.cfg.Modes != nil && !u.cfg.Modes.KidMode() {
		name = "war"
	}
	prompt := fmt.Sprintf("Make the %s face. Reply with exactly: '%s This is my %s face.' — nothing else.", e, e, name)
	return u.inject(c, prompt, "make the "+e+" face")
}

// cleanText is a Say or story text made safe for speech: control
// characters become spaces and runs of white space one space.
func cleanText(s string) string {
	return strings.Join(strings.Fields(controlChars().ReplaceAllString(s, " ")), " ")
}

// spoken binds {text}: required, at most MaxSay characters, not empty
// once cleaned; what names it in the errors ("message", "seed").
func spoken(c echo.Context, what string) (string, error) {
	var msg string
	if err := httpapi.BindFields(c.Request().Body, 16<<10, func(b *httpapi.Binder) { msg = text.Strip(b.String("text")) }); err != nil {
		return "", err
	}
	switch {
	case msg == "":
		return "", httpapi.NewError(http.StatusBadRequest, "Empty "+what+" — type something first.")
	case utf8.RuneCountInString(msg) > MaxSay:
		return "", httpapi.NewError(http.StatusBadRequest, "Too long — keep it under 500 characters.")
	}
	if msg = cleanText(msg); msg == "" {
		return "", httpapi.NewError(http.StatusBadRequest, "The "+what+" was empty after removing control characters.")
	}
	return msg, nil
}

// say is POST /ui/api/say: {text}; the robot hears it as an utterance.
func (u *UI) say(c echo.Context) error {
	msg, err := spoken(c, "message")
	if err != nil {
		return err
	}
	return u.inject(c, msg, msg)
}

// story is POST /ui/api/story: {text}; the robot enters story_time
// (best effort) and hears a story seed.
func (u *UI) story(c echo.Context) error {
	seed, err := spoken(c, "seed")
	if err != nil {
		return err
	}
	if u.cfg.Controls != nil {
		if err := u.cfg.Controls.SetRobotState(c.Request().Context(), "story_time", ""); err != nil {
			u.log.Warn("story: state change failed; starting the story anyway", "error", err)
		}
	}
	return u.inject(c, "Tell a new story about: "+seed, seed)
}

// dance is POST /ui/api/dance.
func (u *UI) dance(c echo.Context) error { return u.inject(c, danceText, "dance & sing") }

// inject makes the robot hear utterance and answers with its reply when it
// comes within replyWait (the next completed voice turn).
func (u *UI) inject(c echo.Context, utterance, label string) error {
	if u.cfg.Robot == nil {
		return unavailable("xiaozhi")
	}
	var replies <-chan turnbus.Turn
	if u.cfg.Turns != nil {
		// Subscribed before the robot hears the text, so the reply
		// cannot be missed.
		if sub, err := u.cfg.Turns.Subscribe("dashboard action", 4); err == nil {
			defer sub.Close()
			replies = sub.C
		}
	}
	ctx := c.Request().Context()
	if err := u.cfg.Robot.InjectText(ctx, "", utterance); err != nil {
		u.log.Warn("dashboard action failed", "action", label, "error", err)
		return robotError(err)
	}
	res := actionResult{OK: true, Sent: label, Response: noReply}
	if replies != nil {
		t := u.cfg.Clock.NewTimer(replyWait)
		defer t.Stop()
		select {
		case r := <-replies:
			res.Response = r.ResponseText
			if res.Response == "" {
				res.Response = "(no text)"
			}
		case <-t.Chan():
		case <-ctx.Done():
			return nil
		}
	}
	return httpapi.WriteJSON(c, http.StatusOK, res)
}

// songsResult is GET /ui/api/songs.
type songsResult struct {
	Songs []string `json:"songs"`
	Error string   `json:"error,omitempty"`
}

// songs is GET /ui/api/songs: xiaozhi's catalogue, or why it is empty.
func (u *UI) songs(c echo.Context) error {
	if u.cfg.Robot == nil {
		return httpapi.WriteJSON(c, http.StatusOK, songsResult{Songs: []string{}, Error: "xiaozhi unavailable"})
	}
	files, err := u.cfg.Robot.Songs(c.Request().Context())
	res := songsResult{Songs: files}
	if res.Songs == nil {
		res.Songs = []string{}
	}
	if err != nil {
		res.Error = reason(err)
	}
	return httpapi.WriteJSON(c, http.StatusOK, res)
}

// playSong is POST /ui/api/play-song: {filename}, a bare name with a song
// extension, played from SongAssetBase.
func (u *UI) playSong(c echo.Context) error {
	if u.cfg.Robot == nil {
		return unavailable("xiaozhi")
	}
	var name string
	if err := httpapi.BindFields(c.Request().Body, 4<<10, func(b *httpapi.Binder) { name = b.String("filename") }); err != nil {
		return err
	}
	if name == "" || path.Base(name) != name || strings.ContainsAny(name, `/\`) || !slices.Contains(songExt, strings.ToLower(path.Ext(name))) {
		return httpapi.NewError(http.StatusBadRequest, "Invalid song filename.")
	}
	r, err := u.cfg.Robot.PlayAsset(c.Request().Context(), "", strings.TrimRight(u.cfg.SongAssetBase, "/")+"/"+name)
	if err == nil && r.Status != http.StatusOK {
		err = &xiaozhi.StatusError{Path: "/xiaozhi/admin/play-asset", Status: r.Status, Body: string(r.Body)}
	}
	if err != nil {
		return robotError(err)
	}
	return httpapi.WriteJSON(c, http.StatusOK, actionResult{OK: true, Sent: name, Response: "playing " + name})
}

// takePhoto is POST /ui/api/take-photo: {device_id?}; the photo arrives on
// /api/vision/explain and shows in the photo card.
func (u *UI) takePhoto(c echo.Context) error {
	if u.cfg.Robot == nil {
		return unavailable("xiaozhi")
	}
	var device string
	if err := httpapi.BindFields(c.Request().Body, 4<<10, func(b *httpapi.Binder) { device = b.StringOr("device_id", "") }); err != nil {
		return err
	}
	if err := u.cfg.Robot.TakePhoto(c.Request().Context(), device, photoQuestion); err != nil {
		return robotError(err)
	}
	return httpapi.WriteJSON(c, http.StatusOK, actionResult{OK: true, Sent: "take a photo", Response: "The photo will show here when it is described."})
}

// recentEvents is GET /ui/api/events: every robot's recent events, newest
// first; 404 when perception is not wired (the page then asks per robot).
func (u *UI) recentEvents(c echo.Context) error {
	if u.cfg.RecentEvents == nil {
		return httpapi.NewError(http.StatusNotFound, "Not Found")
	}
	return c.JSONBlob(http.StatusOK, u.cfg.RecentEvents())
}

// statusResult is GET /ui/api/status: what the status strip and the
// controls show.
type statusResult struct {
	Version string `json:"version"`
	// DemoAgent is true when the built-in demo agent answers;
	// DemoAdvice says how to get a real agent.
	DemoAgent  bool   `json:"demo_agent"`
	DemoAdvice string `json:"demo_advice,omitempty"`
	// Open is true when /ui has no credentials: anyone on the network
	// can use the controls.
	Open      bool          `json:"open"`
	Xiaozhi   xiaozhiStatus `json:"xiaozhi"`
	KidMode   bool          `json:"kid_mode"`
	SmartMode bool          `json:"smart_mode"`
	// SmartOff and SmartOn are the models smart mode switches between.
	SmartOff string   `json:"smart_off_model"`
	SmartOn  string   `json:"smart_on_model"`
	States   []string `json:"states"`
	// Host is the machine the bridge runs on (host.go).
	Host hostStatus `json:"host"`
	// Operator is the operator controls' state (ops.go).
	Operator *operatorStatus `json:"operator"`
}

// xiaozhiStatus is xiaozhi's and the robot's reachability.
type xiaozhiStatus struct {
	Configured bool `json:"configured"`
	// Reachable is true when xiaozhi's admin API answered.
	Reachable bool     `json:"reachable"`
	Devices   []string `json:"devices"`
	// WebSocket is true when the robot's WebSocket port accepts TCP.
	WebSocket bool   `json:"websocket"`
	Error     string `json:"error,omitempty"`
}

// status is GET /ui/api/status.
func (u *UI) status(c echo.Context) error {
	res := statusResult{Version: u.cfg.Version, Open: !u.cfg.Access.Locked(), States: admin.States,
		Xiaozhi: xiaozhiStatus{Devices: []string{}}}
	if u.cfg.DemoAgent != nil {
		res.DemoAgent = u.cfg.DemoAgent()
	}
	res.Operator = u.op.status(c.Request().Context())
	if res.DemoAgent {
		res.DemoAdvice = u.cfg.DemoAdvice
	}
	if u.cfg.Modes != nil {
		res.KidMode, res.SmartMode = u.cfg.Modes.KidMode(), u.cfg.Modes.SmartMode()
	}
	if u.cfg.Controls != nil {
		res.SmartOff, res.SmartOn = u.cfg.Controls.SmartModels()
	}
	if r := u.cfg.Robot; r != nil && r.Enabled() {
		res.Xiaozhi.Configured = true
		ctx := c.Request().Context()
		devices, err := r.Devices(ctx)
		if err != nil {
			res.Xiaozhi.Error = err.Error()
		} else {
			res.Xiaozhi.Reachable, res.Xiaozhi.Devices = true, devices
			if devices == nil {
				res.Xiaozhi.Devices = []string{}
			}
		}
	}
	ports := u.xiaozhiPorts(c.Request().Context())
	res.Xiaozhi.WebSocket = res.Xiaozhi.Configured && ports.WebSocket
	res.Host = u.host(ports)
	return httpapi.WriteJSON(c, http.StatusOK, res)
}
