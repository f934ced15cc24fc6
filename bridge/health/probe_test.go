package health

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// clearedBy removes path, the cause of check's failure, and fails the test
// unless check then passes and dir holds files entries: the probe leaves
// none of its own behind.
func clearedBy(t *testing.T, path string, check func() error, dir string, files int) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil {
		t.Errorf("the check once %s is gone: %v", filepath.Base(path), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != files {
		t.Errorf("%d files in %s after the probe, want %d", len(entries), dir, files)
	}
}

// TestProbesOnPlainFiles: what every user can set up — a regular file
// where a directory should be (ENOTDIR even for root), a directory where a
// file should be — and the probes leaving nothing behind.
func TestProbesOnPlainFiles(t *testing.T) {
	root := t.TempDir()
	blocker := testkit.Blocker(t, filepath.Join(root, "state"))
	dir := filepath.Join(blocker, "logs")
	if err := Writable(dir); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Writable under a file: %v, want ENOTDIR", err)
	}
	mkdirErr := os.MkdirAll(dir, 0o700)
	check := DirCheck(dir, mkdirErr)
	if check == nil || check() == nil {
		t.Fatal("DirCheck of ENOTDIR under a file: want a failing check")
	}
	if Appendable(filepath.Join(dir, "f"))() == nil || Readable(filepath.Join(dir, "f"))() == nil {
		t.Error("Appendable and Readable of a file under a file should fail")
	}
	clearedBy(t, blocker, check, dir, 0)
	if DirCheck(dir, mkdirErr) != nil {
		t.Error("DirCheck of a directory that takes files should be nil")
	}

	// A directory where the file should be: its own cause, not the
	// directory's; Appendable and Readable see it.
	path := filepath.Join(dir, "state.json")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, openErr := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if !errors.Is(openErr, syscall.EISDIR) || DirCheck(dir, openErr) != nil {
		t.Errorf("open of a directory: %v; DirCheck should be nil", openErr)
	}
	if err := Appendable(path)(); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Appendable of a directory: %v, want EISDIR", err)
	}
	if err := Readable(path)(); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Readable of a directory: %v, want EISDIR", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := Appendable(path)(); err != nil {
		t.Errorf("Appendable of a missing file in a writable directory: %v", err)
	}
	if err := Readable(path)(); err != nil {
		t.Errorf("Readable of a missing file: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Appendable created the file: %v", err)
	}
	if DirCheck(dir, errors.New("database disk image is malformed")) != nil {
		t.Error("DirCheck of an error that is no errno should be nil")
	}
}

// TestProbesOnAReadOnlyAndAFullFileSystem: a directory that root cannot
// write either — a read-only tmpfs (EROFS), a full one (ENOSPC: an empty
// file still fits, one byte does not) — fails Writable and gives DirCheck
// a check, which passes once the file system is writable or has room.
func TestProbesOnAReadOnlyAndAFullFileSystem(t *testing.T) {
	if !testkit.InMountNamespace(t) {
		return
	}
	mnt := testkit.MountTmpfs(t, 64<<10)
	dir := filepath.Join(mnt, "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "convo.ndjson")
	if err := os.WriteFile(file, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	testkit.Remount(t, mnt, true)
	_, openErr := os.OpenFile(filepath.Join(dir, "new.ndjson"), os.O_WRONLY|os.O_CREATE, 0o600)
	if !errors.Is(openErr, syscall.EROFS) {
		t.Fatalf("create on a read-only tmpfs: %v", openErr)
	}
	check := DirCheck(dir, openErr)
	if check == nil {
		t.Fatal("DirCheck of EROFS on a read-only directory is nil")
	}
	if err := check(); !errors.Is(err, syscall.EROFS) {
		t.Errorf("the check while read-only: %v, want EROFS", err)
	}
	if err := Appendable(file)(); !errors.Is(err, syscall.EROFS) {
		t.Errorf("Appendable while read-only: %v, want EROFS", err)
	}
	if err := Readable(file)(); err != nil {
		t.Errorf("Readable while read-only: %v", err)
	}
	testkit.Remount(t, mnt, false)
	if err := check(); err != nil {
		t.Errorf("the check once writable: %v", err)
	}
	if err := Appendable(file)(); err != nil {
		t.Errorf("Appendable once writable: %v", err)
	}

	filler := filepath.Join(mnt, "filler")
	err := os.WriteFile(filler, make([]byte, 128<<10), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600); err != nil {
		t.Fatalf("an empty file on the full tmpfs: %v (the probe must write a byte)", err)
	}
	_ = os.Remove(filepath.Join(dir, "empty"))
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, writeErr := f.Write([]byte(strings.Repeat("x", 8192)))
	_ = f.Close()
	if !errors.Is(writeErr, syscall.ENOSPC) {
		t.Fatalf("append on the full tmpfs: %v, want ENOSPC", writeErr)
	}
	check = DirCheck(dir, writeErr)
	if check == nil {
		t.Fatal("DirCheck of ENOSPC on a full directory is nil")
	}
	if err := check(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("the check while full: %v, want ENOSPC", err)
	}
	clearedBy(t, filler, check, dir, 1) // the log
}

// TestCause: a failed write's errno, however deeply wrapped, is named
// without its path, and only a full disk or quota is "full".
func TestCause(t *testing.T) {
	for _, tt := range []struct {
		err   error
		cause string
		full  bool
	}{
		{&fs.PathError{Op: "write", Path: "/state/brain.db.voice-journal", Err: syscall.ENOSPC}, "no space left on device", true},
		{fmt.Errorf("journal: %w", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EDQUOT}), "disk quota exceeded", true},
		{fmt.Errorf("insert: %w (%w)", errors.New("attempt to write a readonly database (8)"), &fs.PathError{Op: "open", Path: "/x", Err: syscall.EROFS}), "read-only file system", false},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, "permission denied", false},
		{&fs.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENOTDIR}, "not a directory", false},
		{&fs.PathError{Op: "sync", Path: "/x", Err: syscall.EIO}, "input/output error", false},
		{errors.New("file is not a database (26)"), "", false},
		{nil, "", false},
	} {
		cause, full := Cause(tt.err)
		if cause != tt.cause || full != tt.full {
			t.Errorf("Cause(%v) = %q, %v; want %q, %v", tt.err, cause, full, tt.cause, tt.full)
		}
		if strings.Contains(cause, "/x") || strings.Contains(cause, "/state") {
			t.Errorf("Cause(%v) names a path: %q", tt.err, cause)
		}
	}
	if dirErrno(&fs.PathError{Op: "sync", Path: "/x", Err: syscall.EIO}) {
		t.Error("EIO is the device's, not a directory's: no directory probe re-checks it")
	}
}
