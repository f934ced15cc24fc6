package bridgeapp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

// fakeHomes is a password database of the given users (name → home); the
// current user is "me" when present.
func fakeHomes(env func(string) (string, bool), users map[string]string) homeDirs {
	lookup := func(name string) (*user.User, error) {
		if home, ok := users[name]; ok {
			return &user.User{Username: name, HomeDir: home}, nil
		}
		return nil, user.UnknownUserError(name)
	}
	return homeDirs{env: env, lookup: lookup, current: func() (*user.User, error) { return lookup("me") }}
}

func TestHomeExpansion(t *testing.T) {
	users := map[string]string{"me": "/home/me", "alice": "/srv/alice/", "nohome": ""}
	tests := []struct {
		name, path string
		env        []string
		want       string
		wantErr    string
	}{
		{"HOME", "~/.zeroclaw/household.yaml", []string{"HOME", "/home/h"}, "/home/h/.zeroclaw/household.yaml", ""},
		{"tilde alone", "~", []string{"HOME", "/home/h/"}, "/home/h", ""},
		{"no HOME: the password entry", "~/x", nil, "/home/me/x", ""},
		{"empty HOME counts as unset", "~/x", []string{"HOME", ""}, "/home/me/x", ""},
		{"relative HOME is passed over", "~/x", []string{"HOME", "home"}, "/home/me/x", ""},
		{"another user", "~alice/brain.db", []string{"HOME", "/home/h"}, "/srv/alice/brain.db", ""},
		{"another user alone", "~alice", nil, "/srv/alice", ""},
		{"absolute path", "/etc/household.yaml", nil, "/etc/household.yaml", ""},
		{"relative path", "state/kid-mode", nil, "state/kid-mode", ""},
		{"tilde inside", "/a/~/b", nil, "/a/~/b", ""},
		{"unknown user", "~bob/x", nil, "", "cannot expand ~bob: no user bob in the password database (user: unknown user bob)"},
		{"user without a home", "~nohome/x", nil, "", "cannot expand ~nohome: user nohome has no home directory in the password database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fakeHomes(env(tt.env...), users).expand(tt.path)
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
				t.Errorf("expand(%q) = %q, %v; want %q, %q", tt.path, got, err, tt.want, tt.wantErr)
			}
		})
	}
	// No HOME and no password entry.
	_, err := fakeHomes(env(), nil).expand("~/x")
	if err == nil || !strings.HasPrefix(err.Error(), "cannot expand ~: HOME is unset and user id "+strconv.Itoa(os.Getuid())+" has no password entry") {
		t.Errorf("no home at all: %v", err)
	}
}

// pathEnvs are the path settings, each set to a value under "~".
func pathEnvs() (envs []string, kv []string) {
	for _, s := range settings {
		if s.path != nil {
			envs = append(envs, s.env)
			kv = append(kv, s.env, "~/p/"+strings.ToLower(s.env))
		}
	}
	return envs, kv
}

// TestPathSettingsExpanded: every path setting's "~" is expanded once, by
// parseConfig, so every component gets an absolute path; the debug line
// shows what it became.
func TestPathSettingsExpanded(t *testing.T) {
	envs, kv := pathEnvs()
	want := []string{"ZEROCLAW_BIN", "ZEROCLAW_SESSION_CWD", "DOTTY_KID_MODE_STATE", "DOTTY_SMART_MODE_STATE", "CONVO_LOG_DIR",
		"CALENDAR_SA_PATH", "GWS_BIN", "VOICE_MEMORY_DB", "HOUSEHOLD_YAML_PATH", "GREETER_STATE_PATH", "ZEROCLAW_WORKSPACE",
		"ZEROCLAW_VOICE_CFG", "ZEROCLAW_DISCORD_CFG", "DOTTY_TOOL_ALLOWLIST", "SIDECAR_PERSONAS_DIR"}
	if d := cmp.Diff(envs, want); d != "" {
		t.Errorf("path settings (-got +want):\n%s", d)
	}
	e := env(append(kv, "HOME", "/home/h")...)
	c, err := parseConfigHomes(nil, e, fakeHomes(e, nil))
	if err != nil {
		t.Fatal(err)
	}
	resolved := c.resolvedValues()
	for _, s := range settings {
		if s.path == nil {
			continue
		}
		want := "/home/h/p/" + strings.ToLower(s.env)
		if got := *s.path(&c); got != want {
			t.Errorf("%s = %q, want %q", s.env, got, want)
		}
		if c.raw[s.env] != "~/p/"+strings.ToLower(s.env) || resolved[s.env] != want {
			t.Errorf("%s: raw %q, logged as %q", s.env, c.raw[s.env], resolved[s.env])
		}
	}
	if c.Perception.Consumers.HouseholdPath != "/home/h/p/household_yaml_path" || c.Agent.Bin != "/home/h/p/zeroclaw_bin" {
		t.Errorf("typed fields: %q %q", c.Perception.Consumers.HouseholdPath, c.Agent.Bin)
	}
	// A path under "~" that cannot be expanded is refused, naming where it
	// came from; every problem at once.
	_, err = parseConfigHomes([]string{"-voice-memory-db", "~bob/brain.db"}, env("HOUSEHOLD_YAML_PATH", "~/h.yaml"), fakeHomes(env(), nil))
	uid := strconv.Itoa(os.Getuid())
	wantErr := []string{
		`invalid -voice-memory-db "~bob/brain.db": cannot expand ~bob: no user bob in the password database (user: unknown user bob)`,
		`invalid HOUSEHOLD_YAML_PATH "~/h.yaml": cannot expand ~: HOME is unset and user id ` + uid + ` has no password entry (user: unknown user me)`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	if d := cmp.Diff(errorLines(err), wantErr); d != "" {
		t.Errorf("errors (-got +want):\n%s", d)
	}
}

// TestDefaultsWithoutAHome: with no HOME and no password entry the
// defaults under "~" go without their file, each saying so once, and no
// component gets a path starting with "~".
func TestDefaultsWithoutAHome(t *testing.T) {
	tmp := t.TempDir() // the demo mode's logs directory is made by build
	e := env("TMPDIR", tmp)
	c, err := parseConfigHomes(nil, e, fakeHomes(e, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		if s.path != nil && strings.HasPrefix(*s.path(&c), "~") {
			t.Errorf("%s = %q", s.env, *s.path(&c))
		}
		if s.path != nil && strings.HasPrefix(s.def, "~") && s.noHome == "" {
			t.Errorf("%s's default is under ~ but says nothing of going without it", s.env)
		}
	}
	if c.Perception.Consumers.HouseholdPath != "" || c.Social.Settings.GreeterStatePath != "" {
		t.Errorf("household %q, greeter state %q; want none", c.Perception.Consumers.HouseholdPath, c.Social.Settings.GreeterStatePath)
	}
	uid := strconv.Itoa(os.Getuid())
	noHome := "cannot expand ~: HOME is unset and user id " + uid + " has no password entry (user: unknown user me)"
	want := []note{
		{"HOUSEHOLD_YAML_PATH", `HOUSEHOLD_YAML_PATH default "~/.zeroclaw/household.yaml": ` + noHome + "; no household roster (set HOUSEHOLD_YAML_PATH to an absolute path)"},
		{"GREETER_STATE_PATH", `GREETER_STATE_PATH default "~/.zeroclaw/greeter_state.json": ` + noHome + "; greeting counts kept in memory only (set GREETER_STATE_PATH to an absolute path)"},
	}
	if d := cmp.Diff(c.notes, want, cmp.AllowUnexported(note{})); d != "" {
		t.Errorf("notes (-got +want):\n%s", d)
	}
	// The demo mode's files go to a temporary directory, said once; the
	// greeter's counts have a place there again, the roster still has none.
	if want := filepath.Join(tmp, "zeroclaw-bridge-"+uid); c.demo.Dir != want || !strings.HasPrefix(c.demo.NoHome, "HOME is unset") {
		t.Errorf("demo state %+v, want %s", c.demo, want)
	}
	var logs bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs})
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	self := func() (string, error) { return "/usr/local/bin/zeroclaw-bridge", nil }
	app, err := build(c, log, lookups{lookPath: notFound, executable: self})
	if err != nil {
		t.Fatal(err)
	}
	if app.cfg.Social.Settings.GreeterStatePath != filepath.Join(c.demo.Dir, "greeter_state.json") {
		t.Errorf("demo greeter state at %q", app.cfg.Social.Settings.GreeterStatePath)
	}
	out := logs.String()
	for _, line := range []string{
		"[WARN]  demo mode: no home directory (" + c.demo.NoHome + "); files kept in a temporary directory a reboot may empty",
		"[WARN]  " + want[0].text,
	} {
		if strings.Count(out, line) != 1 {
			t.Errorf("log lacks, once, %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "GREETER_STATE_PATH default") {
		t.Errorf("the moved greeter state still warned:\n%s", out)
	}
}

func TestDemoStateDir(t *testing.T) {
	me := map[string]string{"me": "/home/me"}
	uid := strconv.Itoa(os.Getuid())
	for _, tt := range []struct {
		name       string
		env        []string
		users      map[string]string
		want       string
		wantNoHome bool
	}{
		{"XDG_STATE_HOME", []string{"XDG_STATE_HOME", "/var/state", "HOME", "/home/h"}, me, "/var/state/zeroclaw-bridge", false},
		{"relative XDG_STATE_HOME is ignored", []string{"XDG_STATE_HOME", "state", "HOME", "/home/h"}, me, "/home/h/.local/state/zeroclaw-bridge", false},
		{"the password entry", nil, me, "/home/me/.local/state/zeroclaw-bridge", false},
		{"no home: TMPDIR", []string{"TMPDIR", "/scratch"}, nil, "/scratch/zeroclaw-bridge-" + uid, true},
		{"no home, no TMPDIR", nil, nil, "/tmp/zeroclaw-bridge-" + uid, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := env(tt.env...)
			got := demoStateDir(e, fakeHomes(e, tt.users))
			if got.Dir != tt.want || (got.NoHome != "") != tt.wantNoHome {
				t.Errorf("got %+v, want %s (no home: %v)", got, tt.want, tt.wantNoHome)
			}
		})
	}
}

// errNoUser stands for a password database that cannot be read.
var errNoUser = errors.New("no password database")

// TestNoPasswordDatabase: a database that cannot be read is reported
// with its own error.
func TestNoPasswordDatabase(t *testing.T) {
	h := homeDirs{env: env(), current: func() (*user.User, error) { return nil, errNoUser }}
	if _, err := h.expand("~/x"); !errors.Is(err, errNoUser) {
		t.Errorf("err %v, want it to wrap %v", err, errNoUser)
	}
}

// TestDemoTempDir: without a home the demo mode's directory is a
// predictable path in a shared directory; it is made 0700 and used, or
// kept when it is the user's own private directory, and refused with a
// WARN otherwise (another user could have made it), for a fresh private
// directory beside it that is left as it is.
func TestDemoTempDir(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, dir string) // what is at dir first
		refused string                         // why it is refused; "" when used
	}{
		{"made", func(*testing.T, string) {}, ""},
		{"the user's own, 0700", func(t *testing.T, dir string) { mkdirMode(t, dir, 0o700) }, ""},
		{"group and others may write", func(t *testing.T, dir string) { mkdirMode(t, dir, 0o777) }, "has mode 0777: other users may write or read it"},
		{"others may read", func(t *testing.T, dir string) { mkdirMode(t, dir, 0o705) }, "has mode 0705"},
		{"a symbolic link to a private directory", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			mkdirMode(t, target, 0o700)
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		{"a file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not a directory"},
		{"another user's", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("needs root to make a directory another user owns")
			}
			mkdirMode(t, dir, 0o700)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "belongs to user id 65534, not 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "zeroclaw-bridge-"+strconv.Itoa(os.Getuid()))
			tt.prepare(t, dir)
			before := lstatLine(t, dir)
			var logs bytes.Buffer
			got := demoState{Dir: dir, NoHome: "no home"}.tempDir(hclog.New(&hclog.LoggerOptions{Output: &logs}))
			if tt.refused == "" {
				if got != dir {
					t.Fatalf("got %q, want %q", got, dir)
				}
				if logs.Len() != 0 {
					t.Errorf("logged for a directory it uses:\n%s", logs.String())
				}
			} else {
				if got == dir || filepath.Dir(got) != parent || !strings.HasPrefix(filepath.Base(got), filepath.Base(dir)+"-") {
					t.Fatalf("got %q, want a fresh directory %s-* beside the refused one", got, dir)
				}
				if after := lstatLine(t, dir); after != before {
					t.Errorf("the refused path changed: %s, was %s", after, before)
				}
				out := logs.String()
				if !strings.Contains(out, "[WARN]  demo mode: refusing the temporary directory ("+dir+" "+tt.refused) ||
					!strings.Contains(out, "using a fresh private one instead") || !strings.Contains(out, "dir="+got) {
					t.Errorf("log does not say why %s is refused (%s) and what is used instead:\n%s", dir, tt.refused, out)
				}
			}
			if err := ownPrivateDir(got); err != nil {
				t.Errorf("the directory used: %v", err)
			}
		})
	}
}

// TestDemoTempDirNone: when the path is refused and no directory can be
// made beside it either, the demo mode's files stay at their defaults,
// said in one WARN.
func TestDemoTempDirNone(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e := env()
	c, err := parseConfigHomes(nil, e, fakeHomes(e, nil))
	if err != nil {
		t.Fatal(err)
	}
	c.demo = demoState{Dir: filepath.Join(file, "zeroclaw-bridge-0"), NoHome: "HOME is unset"}
	var logs bytes.Buffer
	got := c.withDemoState(hclog.New(&hclog.LoggerOptions{Output: &logs}))
	if got.ConvoLog.Dir != c.ConvoLog.Dir || got.Memory.Path != c.Memory.Path {
		t.Errorf("files moved to %q, %q; want the defaults %q, %q", got.ConvoLog.Dir, got.Memory.Path, c.ConvoLog.Dir, c.Memory.Path)
	}
	out := logs.String()
	if strings.Count(out, "[WARN]") != 1 || !strings.Contains(out, "no private one can be made either; the files stay at their defaults") {
		t.Errorf("want one WARN saying the files stay at their defaults:\n%s", out)
	}
}

// TestDemoStateRefusedTempDir: through the demo mode's settings, a
// pre-made directory others may write is not used; every moved file goes
// to the fresh one, and both WARN lines name it.
func TestDemoStateRefusedTempDir(t *testing.T) {
	tmp := t.TempDir()
	e := env("TMPDIR", tmp)
	c, err := parseConfigHomes(nil, e, fakeHomes(e, nil))
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(tmp, "zeroclaw-bridge-"+strconv.Itoa(os.Getuid()))
	if c.demo.Dir != planted {
		t.Fatalf("demo dir %q, want %q", c.demo.Dir, planted)
	}
	mkdirMode(t, planted, 0o777)
	var logs bytes.Buffer
	got := c.withDemoState(hclog.New(&hclog.LoggerOptions{Output: &logs}))
	fresh := got.demo.Dir
	if fresh == planted || filepath.Dir(fresh) != tmp {
		t.Fatalf("demo dir %q; want a fresh one in %s", fresh, tmp)
	}
	for name, p := range map[string]string{"logs": got.ConvoLog.Dir, "brain.db": got.Memory.Path, "greeter": got.Social.Settings.GreeterStatePath} {
		if !strings.HasPrefix(p, fresh+string(filepath.Separator)) {
			t.Errorf("%s at %q, not under %s", name, p, fresh)
		}
	}
	out := logs.String()
	for _, want := range []string{
		"[WARN]  demo mode: refusing the temporary directory (" + planted + " has mode 0777: other users may write or read it)",
		"[WARN]  demo mode: no home directory (",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "dir="+fresh) != 2 {
		t.Errorf("want both WARN lines to name %s:\n%s", fresh, out)
	}
}

// mkdirMode makes dir with exactly mode (whatever the umask).
func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

// lstatLine is what is at path: its type, mode and owner, or that it is
// missing.
func lstatLine(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "missing"
	}
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no owner for %s", path)
	}
	return fmt.Sprintf("%v uid %d", fi.Mode(), st.Uid)
}
