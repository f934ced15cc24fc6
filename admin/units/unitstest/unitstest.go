// Package unitstest runs a private D-Bus daemon with a fake systemd on it
// answering unit property reads, for tests of the units reader and of the
// binary (DBUS_SYSTEM_BUS_ADDRESS points it there).
package unitstest

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// daemonPath is Debian's dbus-daemon, installed by .ci/run.
const daemonPath = "/usr/bin/dbus-daemon"

// Unit is one fake unit's properties.
type Unit struct {
	Load, Active, Sub string
	// Changed is StateChangeTimestamp (zero: none).
	Changed time.Time
}

// Systemd is a fake systemd on a private bus.
type Systemd struct {
	// Addr is the bus address (for DBUS_SYSTEM_BUS_ADDRESS).
	Addr string

	mu    sync.Mutex
	units map[string]Unit // by full unit name
	reads int
}

// Start runs a bus (StartBus) and claims org.freedesktop.systemd1 on it
// until the test ends.
func Start(t *testing.T) *Systemd {
	t.Helper()
	s := &Systemd{Addr: StartBus(t), units: map[string]Unit{}}
	conn, err := dbus.Connect(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.ExportSubtree(properties{s}, "/org/freedesktop/systemd1/unit", "org.freedesktop.DBus.Properties"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.systemd1", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("claim org.freedesktop.systemd1: %v (reply %d)", err, reply)
	}
	return s
}

// StartBus runs dbus-daemon on a socket in the test's directory until the
// test ends and returns its address. Without dbus-daemon the test is
// skipped, except in CI.
func StartBus(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(daemonPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing in CI (.ci/run installs it): %v", daemonPath, err)
		}
		t.Skipf("%s not installed", daemonPath)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "bus")
	cfg := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(cfg, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=`+sock+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(daemonPath, "--config-file="+cfg, "--nofork", "--nopidfile") // #nosec G204 -- dbus-daemon from PATH and a config file the test wrote (tests only)
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Error("dbus-daemon not reaped within 10 s")
		}
	})
	addr := "unix:path=" + sock
	testkit.WaitFor(t, 10*time.Second, "dbus-daemon listening", func() bool {
		select {
		case <-exited:
			t.Fatalf("dbus-daemon exited: %s", stderr.String())
		default:
		}
		c, err := dbus.Connect(addr)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	})
	return addr
}

// Set makes name (a full unit name) a unit with u's state.
func (s *Systemd) Set(name string, u Unit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.units[name] = u
}

// Reads counts the property reads answered.
func (s *Systemd) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// properties answers org.freedesktop.DBus.Properties.GetAll on unit
// paths as systemd does: an unknown unit is LoadState not-found.
type properties struct{ s *Systemd }

func (p properties) GetAll(msg dbus.Message, iface string) (map[string]dbus.Variant, *dbus.Error) {
	if iface != "org.freedesktop.systemd1.Unit" {
		return nil, dbus.MakeFailedError(os.ErrInvalid)
	}
	obj, _ := msg.Headers[dbus.FieldPath].Value().(dbus.ObjectPath)
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	p.s.reads++
	u := Unit{Load: "not-found", Active: "inactive", Sub: "dead"}
	for name, unit := range p.s.units {
		if path.Base(string(obj)) == sdbus.PathBusEscape(name) {
			u = unit
		}
	}
	var changed uint64
	if !u.Changed.IsZero() {
		changed = uint64(u.Changed.UnixMicro())
	}
	return map[string]dbus.Variant{"LoadState": dbus.MakeVariant(u.Load), "ActiveState": dbus.MakeVariant(u.Active),
		"SubState": dbus.MakeVariant(u.Sub), "StateChangeTimestamp": dbus.MakeVariant(changed)}, nil
}
