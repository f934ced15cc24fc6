package bridgeapp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// homeDirs finds home directories for "~" in path settings the way
// Python's os.path.expanduser did for bridge.py: "~" is $HOME, or the
// current user's password entry when HOME is unset (a systemd service has
// none); "~name" is name's password entry.
type homeDirs struct {
	env     func(string) (string, bool) // the environment (HOME)
	current func() (*user.User, error)  // user.Current
	lookup  func(string) (*user.User, error)
}

// systemHomes reads HOME through env and the password database.
func systemHomes(env func(string) (string, bool)) homeDirs {
	return homeDirs{env: env, current: user.Current, lookup: user.Lookup}
}

// home is name's home directory, the current user's for "". Only an
// absolute directory counts: a relative HOME is passed over for the
// password entry.
func (h homeDirs) home(name string) (string, error) {
	if name == "" {
		if v, _ := h.env("HOME"); filepath.IsAbs(v) {
			return filepath.Clean(v), nil
		}
		u, err := h.current()
		if err != nil {
			return "", fmt.Errorf("HOME is unset and user id %d has no password entry (%w)", os.Getuid(), err)
		}
		if !filepath.IsAbs(u.HomeDir) {
			return "", fmt.Errorf("HOME is unset and user %s has no home directory in the password database", u.Username)
		}
		return filepath.Clean(u.HomeDir), nil
	}
	u, err := h.lookup(name)
	if err != nil {
		return "", fmt.Errorf("no user %s in the password database (%w)", name, err)
	}
	if !filepath.IsAbs(u.HomeDir) {
		return "", fmt.Errorf("user %s has no home directory in the password database", name)
	}
	return filepath.Clean(u.HomeDir), nil
}

// expand replaces a leading "~" or "~name" (alone or before a "/") with
// that home directory; any other path is returned as it is.
func (h homeDirs) expand(path string) (string, error) {
	if !strings.HasPrefix(path, "~") {
		return path, nil
	}
	name, rest, _ := strings.Cut(path[1:], "/")
	home, err := h.home(name)
	if err != nil {
		return "", fmt.Errorf("cannot expand ~%s: %w", name, err)
	}
	return filepath.Join(home, rest), nil
}

// demoState is where the demo mode keeps the files of the settings left
// at their production defaults.
type demoState struct {
	Dir string
	// NoHome is why Dir is a temporary directory ("" when it is not).
	NoHome string
}

// demoStateDir is the user's state directory: $XDG_STATE_HOME (when
// absolute, as the XDG spec wants), else ~/.local/state, each with
// zeroclaw-bridge appended. Without any home directory it is
// $TMPDIR/zeroclaw-bridge-<uid> (/tmp when TMPDIR is unset), which a
// reboot may empty; tempDir checks it before use.
func demoStateDir(env func(string) (string, bool), homes homeDirs) demoState {
	if v, _ := env("XDG_STATE_HOME"); filepath.IsAbs(v) {
		return demoState{Dir: filepath.Join(v, "zeroclaw-bridge")}
	}
	home, err := homes.home("")
	if err != nil {
		tmp, _ := env("TMPDIR")
		if !filepath.IsAbs(tmp) {
			tmp = "/tmp"
		}
		return demoState{Dir: filepath.Join(tmp, "zeroclaw-bridge-"+strconv.Itoa(os.Getuid())), NoHome: err.Error()}
	}
	return demoState{Dir: filepath.Join(home, ".local", "state", "zeroclaw-bridge")}
}

// tempDir is the directory for the demo mode's files when there is no home
// (NoHome set): Dir, a predictable path in a shared directory, when
// ownPrivateDir accepts it; else, said in a WARN, a fresh private
// directory beside it from os.MkdirTemp (each start then gets its own).
// "" when that cannot be made either.
func (d demoState) tempDir(log hclog.Logger) string {
	err := ownPrivateDir(d.Dir)
	if err == nil {
		return d.Dir
	}
	fresh, merr := os.MkdirTemp(filepath.Dir(d.Dir), filepath.Base(d.Dir)+"-")
	if merr != nil {
		log.Warn("demo mode: refusing the temporary directory ("+err.Error()+"), and no private one can be made either; "+
			"the files stay at their defaults (set XDG_STATE_HOME or HOME, or the variables)", "dir", d.Dir, "error", merr)
		return ""
	}
	log.Warn("demo mode: refusing the temporary directory ("+err.Error()+"); using a fresh private one instead, "+
		"which the next start does not find again", "refused", d.Dir, "dir", fresh)
	return fresh
}

// ownPrivateDir makes dir (0700) when it is missing, then checks that it
// is what a predictable path in a shared directory must be to be trusted:
// a directory, not a symbolic link, owned by the current user, with no
// group or other permissions (another user could have made it first).
func ownPrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot make %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("cannot check %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot tell who owns %s", dir)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to user id %d, not %d", dir, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o: other users may write or read it", dir, perm)
	}
	return nil
}
