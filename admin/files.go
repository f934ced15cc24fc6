package admin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
)

// WriteAtomic replaces path with data durably and atomically, confined to
// path's directory (see writeIn). A missing directory is created (0700).
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err // names the directory
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer root.Close()
	return writeIn(root, filepath.Base(path), data, perm)
}

// writeIn replaces name, a path inside root, with data: a temporary file in
// the same directory, fsynced, renamed over name, then the directory
// fsynced, so after a crash readers find the old content or the new, never
// a mix, and the rename itself survives power loss. Every step goes through
// root, so no symlink can carry the write outside it. An existing file keeps
// its mode; a new one gets perm.
func writeIn(root *os.Root, name string, data []byte, perm os.FileMode) error {
	if fi, err := root.Stat(name); err == nil {
		perm = fi.Mode().Perm()
	}
	dir, base := filepath.Split(name)
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(suffix[:])+tmpSuffix)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr, root.Chmod(tmp, perm)); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if d, err := root.Open(filepath.Clean(dir + ".")); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// noteSave records the outcome of saving the state file what at path on
// conds (GET /health): a failure marks it failing and is logged at Error
// when the condition begins, at Debug while it lasts; a success clears it,
// saying so once. A failure its directory causes (read-only, full, no
// permission) is re-checked by probing the directory (health.DirCheck);
// another (the file bind-mounted, a directory in its place) only by the
// next save.
func noteSave(conds *health.Conditions, log hclog.Logger, what, path string, err error) {
	key := what + " " + path
	if err != nil {
		conds.Failed(log, hclog.Error, key, what, err, health.DirCheck(filepath.Dir(path), err), "cannot save the "+what, "path", path)
		return
	}
	conds.Recovered(log, key, what+" saved again", "path", path)
}

// tmpSuffix ends every temporary file writeIn creates.
const tmpSuffix = ".new"

// removeStaleTemps deletes temporary files a crash left in dir (".<name>.<hex>.new").
func removeStaleTemps(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.Type()&fs.ModeType == 0 && strings.HasPrefix(name, ".") && strings.HasSuffix(name, tmpSuffix) &&
			strings.Count(name, ".") >= 3 {
			if os.Remove(filepath.Join(dir, name)) == nil {
				n++
			}
		}
	}
	return n
}
