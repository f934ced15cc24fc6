// Package xiaozhi is the bridge's client for xiaozhi-esp32-server's
// /xiaozhi/admin/* HTTP API, through which the bridge acts on the robot:
// speak, inject a user utterance, abort, turn the head, set state and
// toggles, play an asset, take a photo, list songs and devices.
//
// Calls never panic and never retry. With no host configured every call
// fails at once with ErrDisabled and makes no request. A 503 whose body
// says "no device connected" is ErrNoDevice; any other status of 400 or
// more is a *StatusError. A 404 from an optional route (take-photo,
// capture-audio) is ErrRouteAbsent and is logged only once.
package xiaozhi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Errors callers branch on.
var (
	// ErrDisabled means XIAOZHI_HOST is empty: no request was made.
	ErrDisabled = errors.New("xiaozhi admin calls disabled (XIAOZHI_HOST is empty)")
	// ErrNoDevice means xiaozhi has no connected robot (or not the one named).
	ErrNoDevice = errors.New("robot not connected to xiaozhi")
	// ErrRouteAbsent means this xiaozhi does not have an optional route.
	ErrRouteAbsent = errors.New("xiaozhi route absent")
)

// StatusError is an answer with status 400 or more.
type StatusError struct {
	Path   string
	Status int
	// Body is the first 200 characters of the response.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("xiaozhi %s: HTTP %d: %s", e.Path, e.Status, e.Body)
}

// Default timeouts, bridge.py's: short, because a robot call must never hold up a voice turn.
const (
	PostTimeout = 3 * time.Second
	GetTimeout  = 2 * time.Second
)

// Config configures the client.
type Config struct {
	// Host is XIAOZHI_HOST; empty disables every call.
	Host string
	// Port is XIAOZHI_OTA_PORT (DefaultConfig's; 0 means it too).
	Port int
	// Token is DOTTY_ADMIN_TOKEN, sent as X-Admin-Token when set. Never logged.
	Token string
	// Logger receives failures. Nil discards.
	Logger hclog.Logger
	// HTTPClient defaults to one without keep-alive reuse across hosts; the
	// per-call timeouts come from the context.
	HTTPClient *http.Client
}

// Client calls xiaozhi's admin API. Safe for concurrent use.
type Client struct {
	base  string
	token string
	log   hclog.Logger
	http  *http.Client

	mu     sync.Mutex
	absent map[string]bool // optional routes already logged as absent
}

// DefaultConfig returns bridge.py's admin port (no host: calls disabled):
// the one place it is written.
func DefaultConfig() Config { return Config{Port: 8003} }

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("Port"); the bridge's command line
// names the variable a value came from.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("Port", c.Port >= 1 && c.Port <= 65535, c.Port, "a port from 1 to 65535")
	return errs.Err()
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	c := &Client{token: cfg.Token, log: cfg.Logger, http: cfg.HTTPClient, absent: map[string]bool{}}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if cfg.Host != "" {
		port := cfg.Port
		if port == 0 {
			port = DefaultConfig().Port
		}
		c.base = "http://" + net.JoinHostPort(cfg.Host, strconv.Itoa(port))
	}
	return c
}

// Enabled reports whether a host is configured.
func (c *Client) Enabled() bool { return c.base != "" }

// Response is a successful answer.
type Response struct {
	Status int
	Body   []byte
}

// Do sends one request: a JSON body for POSTs (nil for GETs) bounded by
// timeout. Statuses of 400 or more are errors; so are transport failures.
func (c *Client) Do(ctx context.Context, method, path string, body any, timeout time.Duration) (Response, error) {
	if c.base == "" {
		return Response{}, ErrDisabled
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Response{}, fmt.Errorf("xiaozhi %s: encode body: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return Response{}, fmt.Errorf("xiaozhi %s: %w", path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("X-Admin-Token", c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// Debug: every caller reports its own failure (a consumer once a
		// minute, the dashboard to the user), so a down xiaozhi is one line
		// per cause, not two per event.
		c.log.Debug("xiaozhi admin call failed", "path", path, "error", err)
		return Response{}, fmt.Errorf("xiaozhi %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	r := Response{Status: resp.StatusCode, Body: b}
	if resp.StatusCode < 400 {
		return r, nil
	}
	snippet := text.Truncate(string(b), text.Cut{Max: 200})
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "no device connected"):
		c.log.Debug("xiaozhi has no robot connected", "path", path)
		return r, fmt.Errorf("xiaozhi %s: %w", path, ErrNoDevice)
	case resp.StatusCode == http.StatusNotFound && (path == pathTakePhoto || path == pathCaptureAudio):
		c.mu.Lock()
		first := !c.absent[path]
		c.absent[path] = true
		c.mu.Unlock()
		if first {
			c.log.Warn("xiaozhi does not have this admin route; the feature is off", "path", path)
		}
		return r, fmt.Errorf("xiaozhi %s: %w", path, ErrRouteAbsent)
	}
	c.log.Debug("xiaozhi admin call refused", "path", path, "status", resp.StatusCode, "body", snippet)
	return r, &StatusError{Path: path, Status: resp.StatusCode, Body: snippet}
}

const (
	pathAbort         = "/xiaozhi/admin/abort"
	pathInjectText    = "/xiaozhi/admin/inject-text"
	pathSay           = "/xiaozhi/admin/say"
	pathSetHeadAngles = "/xiaozhi/admin/set-head-angles"
	pathSetState      = "/xiaozhi/admin/set-state"
	pathSetToggle     = "/xiaozhi/admin/set-toggle"
	pathSetFaceIDed   = "/xiaozhi/admin/set-face-identified"
	pathSetTier1Model = "/xiaozhi/admin/set-tier1slim-model"
	pathPlayAsset     = "/xiaozhi/admin/play-asset"
	pathTakePhoto     = "/xiaozhi/admin/take-photo"
	pathCaptureAudio  = "/xiaozhi/admin/capture-audio"
	pathSongs         = "/xiaozhi/admin/songs"
	pathDevices       = "/xiaozhi/admin/devices"
)

func (c *Client) post(ctx context.Context, path string, body any) error {
	_, err := c.Do(ctx, http.MethodPost, path, body, PostTimeout)
	return err
}

// Abort stops the robot's current turn, as a user barge-in would.
func (c *Client) Abort(ctx context.Context, deviceID string) error {
	return c.post(ctx, pathAbort, map[string]string{"device_id": deviceID})
}

// InjectText makes utterance a user turn (it goes through the LLM).
func (c *Client) InjectText(ctx context.Context, deviceID, utterance string) error {
	return c.post(ctx, pathInjectText, map[string]string{"text": utterance, "device_id": deviceID})
}

// Say speaks line exactly, interrupting current speech.
func (c *Client) Say(ctx context.Context, deviceID, line string) error {
	return c.post(ctx, pathSay, map[string]string{"text": line, "device_id": deviceID})
}

// SetHeadAngles turns the head (degrees) at speed.
func (c *Client) SetHeadAngles(ctx context.Context, deviceID string, yaw, pitch, speed int) error {
	return c.post(ctx, pathSetHeadAngles, map[string]any{"device_id": deviceID, "yaw": yaw, "pitch": pitch, "speed": speed})
}

// States are the robot states set-state accepts.
var States = []string{"idle", "talk", "story_time", "security", "sleep", "dance"}

// SetState sets the robot's state, one of States.
func (c *Client) SetState(ctx context.Context, deviceID, state string) error {
	return c.post(ctx, pathSetState, map[string]string{"device_id": deviceID, "state": state})
}

// SetToggle sets a robot toggle: "kid_mode" or "smart_mode".
func (c *Client) SetToggle(ctx context.Context, deviceID, name string, enabled bool) error {
	return c.post(ctx, pathSetToggle, map[string]any{"device_id": deviceID, "name": name, "enabled": enabled})
}

// SetFaceIdentified shows the robot's "face identified" pip.
func (c *Client) SetFaceIdentified(ctx context.Context, deviceID string) error {
	return c.post(ctx, pathSetFaceIDed, map[string]string{"device_id": deviceID})
}

// SetTier1SlimModel hot-swaps Tier1Slim's model; url and apiKey are sent
// only when not empty.
func (c *Client) SetTier1SlimModel(ctx context.Context, model, url, apiKey string) error {
	body := map[string]string{"model": model}
	if url != "" {
		body["url"] = url
	}
	if apiKey != "" {
		body["api_key"] = apiKey
	}
	return c.post(ctx, pathSetTier1Model, body)
}

// PlayAsset plays a file on the xiaozhi host. An empty deviceID sends no
// device_id at all (xiaozhi picks the first robot), as voice play_song
// does. It returns the raw response, so callers can require exactly 200.
func (c *Client) PlayAsset(ctx context.Context, deviceID, asset string) (Response, error) {
	body := map[string]string{"asset": asset}
	if deviceID != "" {
		body["device_id"] = deviceID
	}
	return c.Do(ctx, http.MethodPost, pathPlayAsset, body, PostTimeout)
}

// TakePhoto asks the robot to photograph and post the picture to the
// bridge's /api/vision/explain with question.
func (c *Client) TakePhoto(ctx context.Context, deviceID, question string) error {
	return c.post(ctx, pathTakePhoto, map[string]string{"device_id": deviceID, "question": question})
}

// CaptureAudio asks for an audio clip (absent on current xiaozhi).
func (c *Client) CaptureAudio(ctx context.Context, deviceID string, duration time.Duration) error {
	return c.post(ctx, pathCaptureAudio, map[string]any{"device_id": deviceID, "duration_ms": duration.Milliseconds()})
}

// Songs lists the song files xiaozhi can play (string entries of "files").
func (c *Client) Songs(ctx context.Context) ([]string, error) {
	r, err := c.Do(ctx, http.MethodGet, pathSongs, nil, GetTimeout)
	if err != nil {
		return nil, err
	}
	var body struct {
		Files []json.RawMessage `json:"files"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return nil, fmt.Errorf("xiaozhi %s: %w", pathSongs, err)
	}
	var files []string
	for _, raw := range body.Files {
		var s string
		if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
			files = append(files, s)
		}
	}
	return files, nil
}

// Devices lists the connected robots.
func (c *Client) Devices(ctx context.Context) ([]string, error) {
	r, err := c.Do(ctx, http.MethodGet, pathDevices, nil, GetTimeout)
	if err != nil {
		return nil, err
	}
	var body struct {
		Devices []string `json:"devices"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return nil, fmt.Errorf("xiaozhi %s: %w", pathDevices, err)
	}
	return body.Devices, nil
}
