package health

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// ErrReported marks an error whose cause is a failing condition: it has
// been logged once and /health names it, so a caller answers without
// logging it again.
var ErrReported = errors.New("reported on /health")

// probePattern names the file Writable creates and removes at once.
const probePattern = ".zeroclaw-bridge-probe-*"

// Writable reports whether dir takes a new file: it creates dir (0700)
// when missing, as the components do before they write, then creates a
// temporary file in it, writes one byte (an empty file needs no free
// block: a full disk would pass) and removes it.
func Writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, probePattern)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte{'\n'})
	cerr := f.Close()
	return errors.Join(werr, cerr, os.Remove(f.Name()))
}

// DirCheck returns the re-check of a write in dir that failed with err
// when the failure is the directory's or its file system's: err is
// EACCES, EPERM, EROFS, ENOSPC, EDQUOT or ENOTDIR and dir fails Writable
// now too. Then the check is Writable(dir). Otherwise it returns nil: the
// cause is the file's own (a directory in its place, a file the process
// may not open) or unknown, and a directory that takes files says nothing
// about it.
func DirCheck(dir string, err error) Check {
	if !dirErrno(err) || Writable(dir) == nil {
		return nil
	}
	return func() error { return Writable(dir) }
}

// The errnos a directory or a file system causes, a full disk first; a
// failed write may also meet the device's EIO.
var (
	dirErrnos   = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.ENOTDIR}
	writeErrnos = append(slices.Clip(dirErrnos), syscall.EIO)
)

// dirErrno reports whether err is an errno a directory or a file system
// causes.
func dirErrno(err error) bool {
	return slices.ContainsFunc(dirErrnos, func(e syscall.Errno) bool { return errors.Is(err, e) })
}

// Cause is what an answer may say of a failed write err without naming a
// path: the text of the errno it wraps when a directory, a file system or
// the device causes it ("no space left on device", "read-only file
// system", "permission denied", "input/output error"…), and whether that
// is a full disk (ENOSPC, EDQUOT: HTTP 507 Insufficient Storage). It is
// "", false for any other error.
func Cause(err error) (cause string, full bool) {
	for _, e := range writeErrnos {
		if errors.Is(err, e) {
			return e.Error(), e == syscall.ENOSPC || e == syscall.EDQUOT
		}
	}
	return "", false
}

// Appendable is the re-check of a file that could not be opened for
// writing: path opens for appending again (it is not created), or it is
// gone and its directory is Writable (the next write creates it).
func Appendable(path string) Check {
	return func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0) // #nosec G304 -- a component's own file
		if errors.Is(err, fs.ErrNotExist) {
			return Writable(filepath.Dir(path))
		}
		if err != nil {
			return err
		}
		return f.Close()
	}
}

// Readable is the re-check of a file that could not be read for a file
// system reason: its first byte reads again, or it is gone (nothing to
// read is no problem).
func Readable(path string) Check {
	return func() error {
		f, err := os.Open(path) // #nosec G304 -- a component's own file
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		_, rerr := f.Read(make([]byte, 1)) // a directory opens, but does not read
		if errors.Is(rerr, io.EOF) {
			rerr = nil
		}
		return errors.Join(rerr, f.Close())
	}
}
