package testkit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountNSEnv names, in the child InMountNamespace starts, the test it runs.
const mountNSEnv = "ZEROCLAW_TEST_MOUNT_NAMESPACE"

// InMountNamespace lets a test mount file systems (MountTmpfs) without
// touching the host's: it reports true when the test already runs in a
// private mount namespace of its own. Otherwise it runs the test again,
// alone, in a child process of the test binary started in a new private
// mount namespace, fails t when the child fails (its output is logged),
// skips t when the child skipped, and reports false: the caller returns.
// Without root, or where no namespace can be made, it skips t and says
// why. The child is killed after two minutes.
func InMountNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(mountNSEnv) == t.Name() {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a private mount namespace (unshare CLONE_NEWNS) to mount a read-only or full file system in")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1") // #nosec G204 -- re-runs this test binary on one of its own tests
	cmd.Env = append(os.Environ(), mountNSEnv+"="+t.Name())
	// Go makes the new namespace's mounts private (MS_REC|MS_PRIVATE on
	// /) before it executes the child: nothing it mounts reaches the host.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skipf("cannot start the test in a private mount namespace: %v", err)
	}
	t.Logf("in a private mount namespace:\n%s", out)
	switch {
	case err != nil:
		t.Fatalf("the test failed in its mount namespace: %v", err)
	case strings.Contains(string(out), "--- SKIP: "+t.Name()+" "):
		t.Skip("skipped in its mount namespace")
	case !strings.Contains(string(out), "--- PASS: "+t.Name()+" "):
		t.Fatal("the test did not run in its mount namespace")
	}
	return false
}

// MountTmpfs mounts a tmpfs of size bytes on a new directory of the test
// and unmounts it when the test ends. It needs a mount namespace of the
// test's own (InMountNamespace).
func MountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Getenv(mountNSEnv) != t.Name() {
		t.Fatal("MountTmpfs outside InMountNamespace would mount on the host")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)+",mode=0700"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { // before t.TempDir removes dir
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Remount makes the mount at dir (MountTmpfs) read-only, or writable
// again: a read-only file system refuses writes with EROFS, root's too.
func Remount(t *testing.T, dir string, readOnly bool) {
	t.Helper()
	flags := uintptr(syscall.MS_REMOUNT)
	if readOnly {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("", dir, "", flags, ""); err != nil {
		t.Fatalf("remount %s (read-only %v): %v", dir, readOnly, err)
	}
}

// ReadOnlyFile makes the file at path read-only, root's writes included
// (EROFS), by bind-mounting it read-only on itself, and returns the
// function that undoes it (run at the end of the test too). Its
// directory stays writable. It needs a mount namespace of the test's own
// (InMountNamespace).
func ReadOnlyFile(t *testing.T, path string) (undo func()) {
	t.Helper()
	if os.Getenv(mountNSEnv) != t.Name() {
		t.Fatal("ReadOnlyFile outside InMountNamespace would mount on the host")
	}
	if err := syscall.Mount(path, path, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mount %s: %v", path, err)
	}
	if err := syscall.Mount("", path, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		_ = syscall.Unmount(path, 0)
		t.Fatalf("remount %s read-only: %v", path, err)
	}
	mounted := true
	undo = func() {
		if mounted {
			mounted = false
			if err := syscall.Unmount(path, 0); err != nil {
				t.Errorf("unmount %s: %v", path, err)
			}
		}
	}
	t.Cleanup(undo)
	return undo
}
