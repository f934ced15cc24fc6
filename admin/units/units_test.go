package units_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/units/unitstest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// dialer connects to addr as go-systemd connects to the system bus,
// counting its dials in n (when not nil).
func dialer(addr string, n *atomic.Int32) units.Dialer {
	return func(ctx context.Context) (*sdbus.Conn, error) {
		if n != nil {
			n.Add(1)
		}
		return sdbus.NewConnection(func() (*dbus.Conn, error) {
			c, err := dbus.Dial(addr, dbus.WithContext(ctx))
			if err != nil {
				return nil, err
			}
			if err := c.Auth(nil); err != nil {
				_ = c.Close()
				return nil, err
			}
			if err := c.Hello(); err != nil {
				_ = c.Close()
				return nil, err
			}
			return c, nil
		})
	}
}

func TestStatesOverDBus(t *testing.T) {
	sd := unitstest.Start(t)
	since := time.Date(2026, 5, 20, 7, 30, 0, 0, time.UTC)
	sd.Set("zeroclaw-discord.service", unitstest.Unit{Load: "loaded", Active: "active", Sub: "running", Changed: since})
	sd.Set("backup.timer", unitstest.Unit{Load: "loaded", Active: "failed", Sub: "failed", Changed: since.Add(time.Hour)})
	var logs testkit.LogBuffer
	var dials atomic.Int32
	r := units.New(dialer(sd.Addr, &dials), hclog.New(&hclog.LoggerOptions{Output: &logs}))
	defer r.Close()

	got, err := r.States(t.Context(), []string{"zeroclaw-discord", "backup.timer", "gone"})
	if err != nil {
		t.Fatal(err)
	}
	want := []units.State{
		{Name: "zeroclaw-discord.service", Load: "loaded", Active: "active", Sub: "running", Since: since.Local()},
		{Name: "backup.timer", Load: "loaded", Active: "failed", Sub: "failed", Since: since.Add(time.Hour).Local()},
		{Name: "gone.service", Load: "not-found", Active: "inactive", Sub: "dead"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("states (-want +got):\n%s", d)
	}
	// The connection is kept: a second read dials nothing new and sees
	// the change.
	sd.Set("zeroclaw-discord.service", unitstest.Unit{Load: "loaded", Active: "inactive", Sub: "dead", Changed: since.Add(2 * time.Hour)})
	got, err = r.States(t.Context(), []string{"zeroclaw-discord"})
	if err != nil || len(got) != 1 || got[0].Active != "inactive" || !got[0].Since.Equal(since.Add(2*time.Hour)) {
		t.Errorf("second read: %+v, %v", got, err)
	}
	if n := sd.Reads(); n != 4 {
		t.Errorf("%d property reads, want 4", n)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections for two reads, want 1", n)
	}
	if logs.String() != "" {
		t.Errorf("log %q, want nothing while systemd answers", logs.String())
	}
}

func TestStatesWithoutSystemd(t *testing.T) {
	var logs testkit.LogBuffer
	r := units.New(dialer("unix:path="+filepath.Join(t.TempDir(), "no-bus"), nil), hclog.New(&hclog.LoggerOptions{Output: &logs}))
	defer r.Close()
	for range 3 {
		if _, err := r.States(t.Context(), []string{"zeroclaw-discord"}); !errors.Is(err, units.ErrUnreachable) {
			t.Fatalf("error %v, want ErrUnreachable", err)
		}
	}
	if n := strings.Count(logs.String(), "daemon unit states unavailable"); n != 1 {
		t.Errorf("%d warnings for three failed reads, want 1:\n%s", n, logs.String())
	}

	// A bus without systemd on it is unreachable too.
	r2 := units.New(dialer(unitstest.StartBus(t), nil), nil)
	defer r2.Close()
	if _, err := r2.States(t.Context(), []string{"zeroclaw-discord"}); !errors.Is(err, units.ErrUnreachable) {
		t.Fatalf("error %v on a bus without systemd, want ErrUnreachable", err)
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{"zeroclaw-discord": "zeroclaw-discord.service", "a.timer": "a.timer",
		"getty@tty1.service": "getty@tty1.service", "foo.bar": "foo.bar.service"} {
		if got := units.Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "a b", "x;rm", ".service", "é"} {
		if units.Check(bad) == nil {
			t.Errorf("Check(%q) = nil, want an error", bad)
		}
	}
	if err := units.Check("zeroclaw-discord"); err != nil {
		t.Error(err)
	}
}

// TestStatesWithAWedgedBus: a dial that never finishes fails the read
// at its deadline; Close ends the dial.
func TestStatesWithAWedgedBus(t *testing.T) {
	ended := make(chan struct{})
	r := units.New(func(ctx context.Context) (*sdbus.Conn, error) {
		<-ctx.Done() // the Reader's life: until Close
		close(ended)
		return nil, ctx.Err()
	}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.States(ctx, []string{"zeroclaw-discord"}); !errors.Is(err, units.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want ErrUnreachable at the deadline", err)
	}
	r.Close()
	testkit.Recv(t, 5*time.Second, ended, "the dial outlived Close")
}
