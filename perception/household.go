package perception

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
	"go.yaml.in/yaml/v3"
)

// Person is a household member as the core consumers need it.
type Person struct {
	ID          string
	DisplayName string
	Appearance  string
}

// Household is the roster from HOUSEHOLD_YAML_PATH, re-read when the
// file's modification time or size changes (checked at most once a second).
// A missing or malformed file is an empty roster, not an error.
type Household struct {
	path    string
	log     hclog.Logger
	recheck time.Duration // least time between two stats of the file

	mu      sync.Mutex
	checked time.Time
	mtime   time.Time
	size    int64
	people  map[string]Person
	exists  bool
	warned  bool
}

// NewHousehold returns the roster at path ("~/" is the home directory).
func NewHousehold(path string, log hclog.Logger) *Household {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, rest)
		}
	}
	return &Household{path: path, log: log, recheck: time.Second}
}

// Lookup finds a person by id (lowercased).
func (h *Household) Lookup(id string) (Person, bool) {
	people, _ := h.load()
	p, ok := people[strings.ToLower(emoji.Strip(id))]
	return p, ok
}

// People returns the roster's members (unordered).
func (h *Household) People() []Person {
	people, _ := h.load()
	out := make([]Person, 0, len(people))
	for _, p := range people {
		out = append(out, p)
	}
	return out
}

// Exists reports whether a roster file was read.
func (h *Household) Exists() bool {
	_, ok := h.load()
	return ok
}

// AnyAppearance reports whether any member has a non-empty appearance (the
// room-view roster path then owns greetings).
func (h *Household) AnyAppearance() bool {
	people, _ := h.load()
	for _, p := range people {
		if strings.TrimSpace(p.Appearance) != "" {
			return true
		}
	}
	return false
}

func (h *Household) load() (map[string]Person, bool) {
	if h == nil || h.path == "" {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now() // throttles a stat of a file: real time, like the file's mtime
	if !h.checked.IsZero() && now.Sub(h.checked) < h.recheck {
		return h.people, h.exists
	}
	h.checked = now
	fi, err := os.Stat(h.path)
	if err != nil {
		h.people, h.exists, h.mtime, h.size = nil, false, time.Time{}, 0
		return nil, false
	}
	if h.exists && fi.ModTime().Equal(h.mtime) && fi.Size() == h.size {
		return h.people, true
	}
	h.mtime, h.size = fi.ModTime(), fi.Size()
	people, err := parseHousehold(h.path)
	if err != nil {
		if !h.warned {
			h.log.Warn("household file unreadable; using an empty roster", "path", h.path, "error", err)
			h.warned = true
		}
		h.people, h.exists = nil, false
		return nil, false
	}
	h.warned = false
	h.people, h.exists = people, true
	h.log.Info("household roster loaded", "path", h.path, "people", len(people))
	return people, true
}

func parseHousehold(path string) (map[string]Person, error) {
	b, err := os.ReadFile(path) // #nosec G304 -- HOUSEHOLD_YAML_PATH, the operator's file
	if err != nil {
		return nil, err
	}
	var doc struct {
		People map[string]struct {
			DisplayName any `yaml:"display_name"`
			Appearance  any `yaml:"appearance"`
		} `yaml:"people"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	people := make(map[string]Person, len(doc.People))
	for raw, p := range doc.People {
		id := strings.ToLower(strings.TrimSpace(raw))
		if id == "" || id == "_household" {
			continue
		}
		name := scalar(p.DisplayName)
		if name == "" {
			name = raw
		}
		people[id] = Person{ID: id, DisplayName: name, Appearance: scalar(p.Appearance)}
	}
	return people, nil
}

// scalar renders a YAML scalar as text ("" for null or a collection).
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case map[string]any, []any:
		return ""
	default:
		return strings.TrimSpace(strings.Trim(strings.TrimSpace(yamlString(x)), "\n"))
	}
}

func yamlString(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
