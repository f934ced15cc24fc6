// Package ui serves the live dashboard: GET /ui, one page with its assets
// embedded in the binary, and GET /ui/events, the Server-Sent Events feed
// of completed voice turns it shows next to the perception feed, the
// devices' state and the agent's health. Every /ui route is guarded by
// the bridge's one rule (httpapi.Access.Private): the Host must name this
// machine, an action must come from a page on it, and when both a user
// and a password are configured HTTP Basic auth is asked for.
package ui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fanout"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/sse"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
)

//go:embed static
var static embed.FS

// TurnSource is the voice turn feed (*turnbus.Bus).
type TurnSource interface {
	Subscribe(name string, buf int) (*fanout.Sub[turnbus.Turn], error)
}

// Config configures the dashboard.
type Config struct {
	// Turns feeds the recent-turns list; nil leaves it empty and
	// /ui/events answers 503.
	Turns TurnSource
	// Access is the Host, Origin and credentials rule of every /ui route
	// (Basic auth when DOTTY_DASHBOARD_USER and DOTTY_DASHBOARD_PASS are
	// both set); nil: this machine's names, no credentials.
	Access *httpapi.Access
	// Stopping closes when the server shuts down; streams end then.
	Stopping <-chan struct{}
	// Location is the zone of turn timestamps (TZ).
	Location *time.Location
	// Heartbeat is the turn feed's idle comment interval (15 s).
	Heartbeat time.Duration
	// Clock times the heartbeat; nil is the real clock.
	Clock clockwork.Clock
	// MaxClients bounds concurrent /ui/events clients
	// (DASHBOARD_MAX_CLIENTS, 64); past it a client gets 503.
	MaxClients int
	// Controls, Modes and Robot serve the control panel's actions; nil
	// ones answer 503 with what is missing.
	Controls Controls
	Modes    Modes
	Robot    Robot
	// SongAssetBase is the song directory on the xiaozhi host
	// (VOICE_PLAY_SONG_ASSET_BASE).
	SongAssetBase string
	// XiaozhiHost and XiaozhiWSPort are probed over TCP for the robot's
	// WebSocket (XIAOZHI_HOST, XIAOZHI_WS_PORT).
	XiaozhiHost   string
	XiaozhiWSPort int
	// XiaozhiHTTPPort is xiaozhi's HTTP (admin, OTA) port, probed for the
	// host view (XIAOZHI_OTA_PORT); 0 is not probed.
	XiaozhiHTTPPort int
	// ProcDir and SysDir are where the host view reads /proc and /sys
	// ("": the real ones); StateDir is the directory whose file system it
	// reports (CONVO_LOG_DIR; "": none).
	ProcDir, SysDir, StateDir string
	// RobotsSeen is how many robots perception has seen (its device
	// table); nil: unknown.
	RobotsSeen func() int
	// ConvoLogPath is the conversation log's file for a day (convolog's
	// Log.Path), read for today's errors; nil: the errors view has only
	// the live feed.
	ConvoLogPath func(t time.Time) string
	// RecentEvents is every robot's recent perception events as a JSON
	// array of feed frames, newest first (perception's Bus.RecentJSON);
	// nil: the page asks each robot's /api/perception/recent.
	RecentEvents func() []byte
	// LatestPhoto gives a device's latest photo ("" for the newest of
	// any); PhotoList the devices with one, newest first, without bytes.
	// Nil: no photos.
	LatestPhoto func(device string) (Photo, bool)
	PhotoList   func() []Photo
	// MemoryRecords lists the per-person facts for the Memory review
	// card, held-for-review first (as given); more reports that the store
	// left some off. Nil: memory is not configured, and the memory routes
	// answer 503.
	MemoryRecords func(ctx context.Context) (records []MemoryRecord, more bool, err error)
	// ApproveMemory makes a held fact one Dotty may use; RedactMemory
	// deletes a fact, held or approved. Both report false, nil when there
	// is no such fact (for approve: none held with that id). Nil: the
	// action answers 503.
	ApproveMemory func(ctx context.Context, id string) (bool, error)
	RedactMemory  func(ctx context.Context, id string) (bool, error)
	// Version is the bridge's version; DemoAgent reports whether the
	// built-in demo agent is the one answering, and DemoAdvice is the
	// sentence of its banner saying how to get a real agent ("": the
	// page's own, for ZeroClaw).
	Version    string
	DemoAgent  func() bool
	DemoAdvice string
	// Operator configures the operator controls (ops.go).
	Operator OperatorConfig
	// Logger gets a warning per client evicted for falling behind and per
	// failed action (nil: discard).
	Logger hclog.Logger
}

// DefaultConfig returns bridge.py's dashboard settings: the client bound,
// xiaozhi's WebSocket port and the xiaozhi restart's timeout, the one
// place they are written.
func DefaultConfig() Config {
	return Config{MaxClients: DefaultMaxClients, XiaozhiWSPort: 8000,
		Operator: OperatorConfig{XiaozhiRestartTimeout: DefaultXiaozhiRestartTimeout}}
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("MaxClients",
// "Operator.XiaozhiRestartTimeout"): the one range check of each field;
// the bridge's command line names the variable a value came from.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("MaxClients", c.MaxClients >= 1, c.MaxClients, "at least 1")
	errs.Check("Heartbeat", c.Heartbeat >= 0, c.Heartbeat, "0 or more")
	errs.Check("XiaozhiWSPort", c.XiaozhiWSPort >= 1 && c.XiaozhiWSPort <= 65535, c.XiaozhiWSPort, "a port from 1 to 65535")
	return errors.Join(errs.Err(), fieldcheck.Under("Operator", c.Operator.validate()))
}

// DefaultMaxClients is the default bound on turn-feed clients.
const DefaultMaxClients = 64

// FeedMax is how many entries the page's feed keeps (app.js FEED_MAX).
const FeedMax = 500

// ringSize is how many recent turns /ui/api/turns keeps.
const ringSize = 50

// clientQueue bounds a turn-feed client's backlog; a client that falls
// further behind is disconnected (EventSource reconnects).
const clientQueue = 64

// UI is the dashboard.
type UI struct {
	cfg Config
	log hclog.Logger

	feed *fanout.Sub[turnbus.Turn] // subscribed in New, so no turn after New is missed
	// clients fans encoded turns out to /ui/events streams: a client that
	// falls behind is evicted and told so; Run's end closes it.
	clients *fanout.Bus[[]byte]
	slots   chan struct{} // one per connected /ui/events client

	mu     sync.Mutex
	recent [][]byte // encoded turns, oldest first

	hostInfo *hostReader // the host view's /proc, /sys and statfs
	ports    *portProber // xiaozhi's ports, probed at most every probeTTL
	op       *operator   // the operator controls
}

// New returns the dashboard; Run feeds it.
func New(cfg Config) *UI {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.Access == nil {
		cfg.Access = httpapi.NewAccess(httpapi.AccessConfig{Logger: cfg.Logger})
	}
	u := &UI{cfg: cfg, log: cfg.Logger, slots: make(chan struct{}, cfg.MaxClients),
		clients:  fanout.New[[]byte](fanout.Config{Name: "dashboard turn", Logger: cfg.Logger}),
		hostInfo: newHostReader(cfg.ProcDir, cfg.SysDir, cfg.StateDir, cfg.Logger),
		ports:    newPortProber(cfg.Clock)}
	u.op = newOperator(u, cfg.Operator)
	if cfg.Turns != nil {
		feed, err := cfg.Turns.Subscribe("dashboard", 256)
		if err != nil {
			u.log.Warn("voice turns unavailable to the dashboard", "error", err)
		}
		u.feed = feed
	}
	return u
}

// Run follows the turn bus until ctx ends, then ends every turn stream.
func (u *UI) Run(ctx context.Context) error {
	defer u.clients.Close()
	if u.feed == nil {
		<-ctx.Done()
		return nil
	}
	u.feed.Run(ctx, func(t turnbus.Turn) { u.publish(u.encode(t)) }, fanout.Idle{})
	return nil
}

// turnFrame is one turn on /ui/events and /ui/api/turns, in this key order.
type turnFrame struct {
	TS           string  `json:"ts"`
	Channel      string  `json:"channel"`
	RequestText  string  `json:"request_text"`
	ResponseText string  `json:"response_text"`
	LatencyMS    int64   `json:"latency_ms"`
	Error        *string `json:"error"`
	EmojiUsed    string  `json:"emoji_used"`
	Emotion      string  `json:"emotion"`
	// LatencyPhases are the agent's phases of a successful turn.
	LatencyPhases *convolog.Phases `json:"latency_phases,omitempty"`
}

func (u *UI) encode(t turnbus.Turn) []byte {
	f := turnFrame{
		TS:            t.TS.In(u.cfg.Location).Format("2006-01-02T15:04:05.000000-07:00"),
		Channel:       t.Channel,
		RequestText:   userText(t.RequestText),
		ResponseText:  t.ResponseText,
		LatencyMS:     int64(math.Round(float64(t.Latency) / float64(time.Millisecond))),
		EmojiUsed:     t.EmojiUsed,
		Emotion:       t.Emotion,
		LatencyPhases: t.Phases,
	}
	if t.Error != "" {
		f.Error = &t.Error
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(f) // strings and numbers always encode
	return bytes.TrimRight(b.Bytes(), "\n")
}

// userText is what follows the last "[User]" marker, else the whole text.
func userText(s string) string {
	if i := strings.LastIndex(s, "[User]"); i >= 0 {
		return strings.TrimLeft(s[i+len("[User]"):], " ")
	}
	return s
}

func (u *UI) publish(frame []byte) {
	u.mu.Lock()
	u.recent = append(u.recent, frame)
	if len(u.recent) > ringSize {
		u.recent = u.recent[len(u.recent)-ringSize:]
	}
	u.mu.Unlock()
	u.clients.Publish(frame)
}

// Routes mounts /ui, /ui/static/*, /ui/events and /ui/api/*, each behind
// Access.Private.
func (u *UI) Routes(e *echo.Echo) {
	g := e.Group("/ui", u.cfg.Access.Private)
	g.GET("", u.page)
	g.GET("/", u.page)
	sub, _ := fs.Sub(static, "static")
	g.GET("/static/*", echo.WrapHandler(http.StripPrefix("/ui/static/", http.FileServer(http.FS(sub)))))
	g.GET("/events", u.events)
	g.GET("/api/turns", u.turns)
	g.GET("/api/errors/today", u.errorsToday)
	g.GET("/manifest.webmanifest", u.manifest)
	u.actions(g)
	u.op.routes(g)
}

func (u *UI) page(c echo.Context) error {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.HTMLBlob(http.StatusOK, b)
}

// turns is GET /ui/api/turns: the recent turns, newest first.
func (u *UI) turns(c echo.Context) error {
	u.mu.Lock()
	var b bytes.Buffer
	b.WriteByte('[')
	for i := len(u.recent) - 1; i >= 0; i-- {
		if i != len(u.recent)-1 {
			b.WriteByte(',')
		}
		b.Write(u.recent[i])
	}
	u.mu.Unlock()
	b.WriteByte(']')
	return c.JSONBlob(http.StatusOK, b.Bytes())
}

// events is GET /ui/events: retry hint, then one data frame per turn and a
// heartbeat comment after Heartbeat of silence (sse.Serve). 503 without a
// turn source or once Run has returned.
func (u *UI) events(c echo.Context) error {
	if u.feed == nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"detail": "turn feed unavailable"})
	}
	select {
	case u.slots <- struct{}{}:
		defer func() { <-u.slots }()
	default:
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"detail": fmt.Sprintf(
			"too many dashboard clients (limit %d); try again later", u.cfg.MaxClients)})
	}
	sub, err := u.clients.Watch(clientQueue)
	if err != nil { // Run has returned
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"detail": "turn feed unavailable"})
	}
	defer sub.Close()
	return sse.Serve(c, sse.Stream[[]byte]{Sub: sub, Hello: "retry: 5000\n\n", Keepalive: ": heartbeat\n\n",
		Every: u.cfg.Heartbeat, Clock: u.cfg.Clock, Stopping: u.cfg.Stopping,
		Frame: func(buf *bytes.Buffer, frame []byte) {
			buf.WriteString("data: ")
			buf.Write(frame)
			buf.WriteString("\n\n")
		},
		// A named event: the page's onmessage (turns) ignores it;
		// EventSource reconnects after the stream ends.
		FellBehind: func(buf *bytes.Buffer) { fmt.Fprintf(buf, "event: fell_behind\ndata: {\"queue\":%d}\n\n", clientQueue) },
	})
}
