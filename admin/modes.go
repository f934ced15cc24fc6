package admin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
)

// ModesConfig configures the mode store.
type ModesConfig struct {
	// KidStatePath is the kid-mode state file (DOTTY_KID_MODE_STATE).
	KidStatePath string
	// KidDefault applies when the kid state file is missing or unrecognised (DOTTY_KID_MODE).
	KidDefault bool
	// SmartStatePath is the smart-mode state file (DOTTY_SMART_MODE_STATE);
	// missing or unrecognised means off.
	SmartStatePath string
	// Metrics are admin's series (NewMetrics); nil records nothing.
	Metrics *Metrics
	// Logger receives unreadable-file warnings and failed saves. Nil
	// discards.
	Logger hclog.Logger
	// Health is the conditions set a state file marks while it cannot be
	// saved (GET /health); nil keeps a private set.
	Health *health.Conditions
}

// DefaultModesConfig is the mode store's settings as bridge.py had them:
// its state files, and kid mode on when its file says nothing.
func DefaultModesConfig() ModesConfig {
	return ModesConfig{KidDefault: true, KidStatePath: "/root/zeroclaw-bridge/state/kid-mode",
		SmartStatePath: "/root/zeroclaw-bridge/state/smart-mode"}
}

// Modes is the kid and smart mode store, backed by bridge.py's state files
// ("true" or "false", no newline). Reads are live: a file changed by any
// writer (this process, the dashboard, an operator) counts from the next
// read, at the cost of one stat per read. Safe for concurrent use.
type Modes struct {
	log   hclog.Logger
	gauge prometheus.Gauge
	kid   *stateFile
	smart *stateFile

	mu      sync.Mutex
	lastKid *bool // last kid value reported to the gauge
}

// NewModes returns the store and sets dotty_kid_mode_active from the current state.
func NewModes(cfg ModesConfig) *Modes {
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	conds := cfg.Health
	if conds == nil {
		conds = health.New()
	}
	m := &Modes{
		log:   log,
		gauge: cfg.Metrics.kidGauge(),
		kid:   &stateFile{what: "kid mode state", path: cfg.KidStatePath, def: cfg.KidDefault, log: log, health: conds},
		smart: &stateFile{what: "smart mode state", path: cfg.SmartStatePath, def: false, log: log, health: conds},
	}
	m.KidMode()
	return m
}

// KidMode reports kid mode: the state file when it says true/1/yes or
// false/0/no (trimmed, any case), else the DOTTY_KID_MODE default.
func (m *Modes) KidMode() bool {
	on := m.kid.get()
	m.report(on)
	return on
}

// SmartModeStored reports smart mode as its state file says, and whether
// the file exists with a recognised value (nobody set it otherwise).
func (m *Modes) SmartModeStored() (on, ok bool) {
	b, err := os.ReadFile(m.smart.path)
	if err != nil {
		return false, false
	}
	return parseState(b)
}

// SmartMode reports smart mode from its state file (default off).
func (m *Modes) SmartMode() bool { return m.smart.get() }

// SetKidMode writes the kid state file atomically.
func (m *Modes) SetKidMode(on bool) error {
	if err := m.kid.set(on); err != nil {
		return fmt.Errorf("set kid mode: %w", err)
	}
	m.report(on)
	return nil
}

// SetSmartMode writes the smart state file atomically.
func (m *Modes) SetSmartMode(on bool) error {
	if err := m.smart.set(on); err != nil {
		return fmt.Errorf("set smart mode: %w", err)
	}
	return nil
}

func (m *Modes) report(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastKid != nil && *m.lastKid == on {
		return
	}
	m.lastKid = &on
	if m.gauge != nil {
		m.gauge.Set(map[bool]float64{true: 1, false: 0}[on])
	}
}

// stateFile caches a boolean state file, re-reading it when its size or
// modification time changes.
type stateFile struct {
	what   string // "kid mode state", in log lines and on /health
	path   string
	def    bool
	log    hclog.Logger
	health *health.Conditions

	mu     sync.Mutex
	stamp  fileStamp
	cached bool
	valid  bool // cached corresponds to stamp
	warned bool
}

type fileStamp struct {
	exists bool
	size   int64
	mod    time.Time
}

func (s *stateFile) get() bool {
	if s.path == "" {
		return s.def
	}
	st, err := os.Stat(s.path)
	stamp := fileStamp{}
	if err == nil {
		stamp = fileStamp{exists: true, size: st.Size(), mod: st.ModTime()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.valid && s.stamp == stamp {
		return s.cached
	}
	val := s.def
	if stamp.exists {
		b, rerr := os.ReadFile(s.path)
		switch {
		case rerr != nil:
			if !s.warned {
				s.log.Warn("cannot read mode state file; using the default", "path", s.path, "error", rerr)
				s.warned = true
			}
		default:
			if v, ok := parseState(b); ok {
				val = v
			}
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) && !s.warned {
		s.log.Warn("cannot stat mode state file; using the default", "path", s.path, "error", err)
		s.warned = true
	}
	s.stamp, s.cached, s.valid = stamp, val, true
	return val
}

// parseState reads bridge.py's state format.
func parseState(b []byte) (on, ok bool) {
	switch strings.ToLower(string(bytes.TrimSpace(b))) {
	case "true", "1", "yes":
		return true, true
	case "false", "0", "no":
		return false, true
	}
	return false, false
}

// set writes "true" or "false" through a temporary file and a rename; a
// failure is the file's health condition until a save succeeds.
func (s *stateFile) set(on bool) error {
	if s.path == "" {
		return errors.New("no state file configured")
	}
	err := WriteAtomic(s.path, []byte(map[bool]string{true: "true", false: "false"}[on]), 0o600)
	noteSave(s.health, s.log, s.what, s.path, err)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.valid = false
	s.mu.Unlock()
	return nil
}
