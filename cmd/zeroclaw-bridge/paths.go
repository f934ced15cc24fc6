package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
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
// reboot may empty.
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
