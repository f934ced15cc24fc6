// Package units reads the state of systemd units over D-Bus, for the
// dashboard's daemon cards: no systemctl, no shell. Where there is no
// system bus or no systemd on it (a container, CI) every read fails with
// ErrUnreachable.
package units

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/hashicorp/go-hclog"
)

// State is one unit's state as `systemctl status` shows it.
type State struct {
	// Name is the full unit name ("zeroclaw-discord.service").
	Name string `json:"name"`
	// Load is loaded, not-found, masked, bad-setting or error.
	Load string `json:"load"`
	// Active is active, inactive, failed, activating, deactivating or
	// reloading; Sub the type's finer state (running, dead, exited, …).
	Active string `json:"active"`
	Sub    string `json:"sub"`
	// Since is when the unit entered its current state; zero when
	// systemd does not know (a unit that never ran).
	Since time.Time `json:"since,omitzero"`
}

// ErrUnreachable is a read without a usable systemd: no system bus, or
// no systemd on it.
var ErrUnreachable = errors.New("systemd not reachable")

// readTimeout bounds one read of every unit.
const readTimeout = 2 * time.Second

// Dialer connects to systemd's bus; the connection lives until ctx ends
// (godbus closes it then).
type Dialer func(ctx context.Context) (*sdbus.Conn, error)

// Reader reads units' state over one connection, made on first use and
// made again after it is lost. It is safe for concurrent use.
type Reader struct {
	dial Dialer
	log  hclog.Logger
	// life is the connections' context, ended by Close.
	life context.Context
	end  context.CancelFunc

	mu      sync.Mutex
	conn    *sdbus.Conn
	lastErr string // the last failure logged, "" while reads succeed
}

// New returns a Reader of the system bus (nil dial) or of what dial
// connects to; log gets one line each time systemd becomes unreachable
// or reachable again.
func New(dial Dialer, log hclog.Logger) *Reader {
	if dial == nil {
		dial = sdbus.NewSystemConnectionContext
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	life, end := context.WithCancel(context.Background())
	return &Reader{dial: dial, log: log, life: life, end: end}
}

// States reads each unit (names as Name normalises them), in order.
func (r *Reader) States(ctx context.Context, names []string) ([]State, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	out, err := r.read(ctx, names)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil && err.Error() != r.lastErr:
		r.log.Warn("daemon unit states unavailable", "error", err)
		r.lastErr = err.Error()
	case err == nil && r.lastErr != "":
		r.log.Info("systemd reachable again")
		r.lastErr = ""
	}
	return out, err
}

func (r *Reader) read(ctx context.Context, names []string) ([]State, error) {
	conn, err := r.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	out := make([]State, 0, len(names))
	for _, n := range names {
		n = Name(n)
		props, err := conn.GetUnitPropertiesContext(ctx, n)
		if err != nil {
			r.drop(conn)
			return nil, fmt.Errorf("%w: read %s: %w", ErrUnreachable, n, err)
		}
		s := State{Name: n, Load: str(props["LoadState"]), Active: str(props["ActiveState"]), Sub: str(props["SubState"])}
		for _, k := range []string{"StateChangeTimestamp", "ActiveEnterTimestamp"} {
			if us, ok := props[k].(uint64); ok && us > 0 && us <= math.MaxInt64 {
				s.Since = time.UnixMicro(int64(us)) // #nosec G115 -- bounded by MaxInt64 just above
				break
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// connect returns the live connection, dialling when there is none.
func (r *Reader) connect(ctx context.Context) (*sdbus.Conn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil && r.conn.Connected() {
		return r.conn, nil
	}
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
	conn, err := r.dialWithin(ctx)
	if err != nil {
		return nil, err
	}
	r.conn = conn
	return conn, nil
}

// dialWithin dials for a connection that lives until Close, giving up
// when ctx ends first (a late connection is closed when it comes).
func (r *Reader) dialWithin(ctx context.Context) (*sdbus.Conn, error) {
	type dialed struct {
		conn *sdbus.Conn
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		c, err := r.dial(r.life)
		done <- dialed{c, err}
	}()
	select {
	case d := <-done:
		return d.conn, d.err
	case <-ctx.Done():
		go func() {
			if d := <-done; d.conn != nil {
				d.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// drop forgets conn after a failed read, so the next read dials again.
func (r *Reader) drop(conn *sdbus.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == conn {
		r.conn.Close()
		r.conn = nil
	}
}

// Close closes the connection; a dial still under way ends too.
func (r *Reader) Close() {
	r.end()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// unitTypes are systemd's unit suffixes.
var unitTypes = []string{".service", ".socket", ".target", ".timer", ".path", ".mount", ".automount",
	".swap", ".device", ".slice", ".scope"}

// Name is the full unit name: name itself when it ends in a unit type,
// else name.service, as systemctl reads it.
func Name(name string) string {
	for _, t := range unitTypes {
		if strings.HasSuffix(name, t) {
			return name
		}
	}
	return name + ".service"
}

// nameChars are the characters of a unit name (systemd's unit_name_is_valid).
var nameChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9:_.\\@-]+$`) })

// Check reports why name is not a unit name.
func Check(name string) error {
	if n := Name(name); len(n) > 255 || !nameChars().MatchString(name) || strings.HasPrefix(name, ".") {
		return errors.New("want systemd unit names (letters, digits and :_.\\@-), such as zeroclaw-discord or zeroclaw-discord.service")
	}
	return nil
}
