package admin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// DefaultAllowList is bridge.py's tool allow list.
var DefaultAllowList = []string{"audio_speaker.set_volume", "get_device_status", "robot.create_reminder",
	"robot.get_head_angles", "robot.get_reminders", "robot.set_head_angles", "robot.set_led_color",
	"robot.stop_reminder", "screen.set_brightness", "screen.set_theme"}

// Safety is the tool allow list of /admin/safety, kept in a state file of
// its own (one tool per line, sorted). The permission policy reads it live
// through List. A missing file is the default list.
type Safety struct {
	path string

	mu   sync.Mutex
	list []string
}

// NewSafety loads the allow list at path.
func NewSafety(path string) (*Safety, error) {
	s := &Safety{path: path, list: slices.Clone(DefaultAllowList)}
	b, err := os.ReadFile(path) // #nosec G304 -- DOTTY_TOOL_ALLOWLIST, the operator's file
	switch {
	case errors.Is(err, fs.ErrNotExist) || path == "":
		return s, nil
	case err != nil:
		return s, fmt.Errorf("read tool allow list: %w", err) // err names the path
	}
	var list []string
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			list = append(list, t)
		}
	}
	slices.Sort(list)
	s.list = slices.Compact(list)
	return s, nil
}

// List returns the current allow list.
func (s *Safety) List() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// change adds or removes tool and saves the list; it returns the sizes
// before and after.
func (s *Safety) change(add bool, tool string) (before, after int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := slices.Clone(s.list)
	before = len(next)
	i, found := slices.BinarySearch(next, tool)
	switch {
	case add && !found:
		next = slices.Insert(next, i, tool)
	case !add && found:
		next = slices.Delete(next, i, i+1)
	}
	var b bytes.Buffer
	for _, t := range next {
		b.WriteString(t + "\n")
	}
	if err := WriteAtomic(s.path, b.Bytes(), 0o600); err != nil {
		return before, before, err
	}
	s.list = next
	return before, len(next), nil
}

var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._]+$`) })

// safety is POST /admin/safety.
func (h *Handler) safety(c echo.Context) error {
	action, tool, err := parseStrings(c, "action", "tool")
	if err != nil {
		return err
	}
	if action != "add" && action != "remove" {
		return httpapi.NewError(http.StatusBadRequest, "action must be 'add' or 'remove'")
	}
	if !toolName().MatchString(tool) {
		return httpapi.NewError(http.StatusBadRequest, "tool name has invalid chars")
	}
	if h.cfg.Safety == nil {
		return httpapi.NewError(http.StatusServiceUnavailable, "tool allow list not configured")
	}
	before, after, err := h.cfg.Safety.change(action == "add", tool)
	noteSave(h.cfg.Health, h.log, "tool allow list", h.cfg.Safety.path, err)
	if err != nil {
		return httpapi.NewError(http.StatusInternalServerError, "could not save the tool allow list: "+err.Error())
	}
	h.log.Info("tool allow list changed; applied live", "action", action, "tool", tool, "size", after)
	return httpapi.WriteJSON(c, http.StatusOK, struct {
		OK         bool   `json:"ok"`
		Action     string `json:"action"`
		Tool       string `json:"tool"`
		SizeBefore int    `json:"size_before"`
		SizeAfter  int    `json:"size_after"`
		Restart    string `json:"restart"`
	}{true, action, tool, before, after, h.cfg.VoiceUnit})
}
