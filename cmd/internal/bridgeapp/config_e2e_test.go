package bridgeapp

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestBinaryEmptyEnvironment starts the binary as systemd starts a unit
// without Environment= lines: no HOME, no PATH, nothing. It must listen,
// answer /health and a turn, take the household roster's "~" from the
// password database, and create nothing named "~" in its working
// directory (bridge.py's expanduser did the same lookup; the old Go
// bridge made a directory literally named "~").
//
// As root (CI) the child runs as nobody, whose home, /nonexistent, cannot
// be created: the demo mode's state directory under it fails, and the
// bridge must still serve, with those features degraded. As another user
// it runs as that user, with flags keeping every file it writes in its
// working directory, so the test never writes to the developer's home.
func TestBinaryEmptyEnvironment(t *testing.T) {
	bin := bridgeBinary(t)
	wd := t.TempDir()
	args := []string{"-bridge-host", "127.0.0.1", "-port", "0", "-weather-location", "-", "-log-level", "debug"}
	var attr *syscall.SysProcAttr
	var home string
	if os.Getuid() == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("running as root needs the user nobody to drop to: %v", err)
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)
		attr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		home = nobody.HomeDir
		// nobody must reach the binary (it runs itself as the demo agent)
		// and own its working directory; t.TempDir's are root's alone.
		shared, err := os.MkdirTemp("", "zeroclaw-bridge-emptyenv-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(shared) })
		if err := os.Chmod(shared, 0o755); err != nil {
			t.Fatal(err)
		}
		bin = copyExecutable(t, bin, filepath.Join(shared, "zeroclaw-bridge"))
		wd = filepath.Join(shared, "wd")
		if err := os.Mkdir(wd, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(wd, uid, gid); err != nil {
			t.Fatal(err)
		}
	} else {
		u, err := user.Current()
		if err != nil {
			t.Fatalf("no password entry for the current user: %v", err)
		}
		home = u.HomeDir
		for _, s := range settings {
			if s.path != nil && s.env != "HOUSEHOLD_YAML_PATH" && s.env != "ZEROCLAW_BIN" && s.env != "ZEROCLAW_SESSION_CWD" {
				args = append(args, "-"+s.flagName(), filepath.Join(wd, "files", strings.ToLower(s.env)))
			}
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{} // empty, not inherited
	cmd.Dir = wd
	cmd.SysProcAttr = attr
	p := runBridge(t, cmd, wd)

	p.health("the demo agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })
	if code, body := p.post("/api/message", `{"content":"anyone home?"}`); code != http.StatusOK || !strings.Contains(body, "anyone home?") {
		t.Errorf("turn: %d %s", code, body)
	}
	household := filepath.Join(home, ".zeroclaw", "household.yaml")
	log := p.log()
	for _, want := range []string{" household=" + household + "\n", " household_yaml_path=" + household + " "} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q (the roster from the password database):\n%s", want, log)
		}
	}
	if strings.Contains(log, "~/") {
		t.Errorf("a path under ~ reached the log:\n%s", log)
	}
	err := filepath.WalkDir(wd, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), "~") {
			t.Errorf("%s was created", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyExecutable copies the binary at src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestBinaryKidModeOnWarns: DOTTY_KID_MODE=on keeps bridge.py's meaning,
// off, and says so in one WARN line at start naming the variable, the
// value, what it became and the words the switch takes.
func TestBinaryKidModeOnWarns(t *testing.T) {
	p := startBridge(t, "DOTTY_KID_MODE=on")
	line := `[WARN]  zeroclaw-bridge: DOTTY_KID_MODE "on" is read as off: this switch is on for 1, true or yes in any case, off for anything else` + "\n"
	if n := strings.Count(p.log(), line); n != 1 {
		t.Errorf("the WARN line appears %d times, want once:\n%s", n, p.log())
	}
	if !strings.Contains(p.log(), " dotty_kid_mode=false ") {
		t.Errorf("the configuration line does not show kid mode off:\n%s", p.log())
	}
	code, body := p.get("/ui/api/status")
	var st struct {
		KidMode *bool `json:"kid_mode"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || st.KidMode == nil || *st.KidMode {
		t.Errorf("dashboard status %d %s: want kid mode off", code, body)
	}
}
