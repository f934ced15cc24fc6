//go:build !linux

package testkit

import "testing"

// InMountNamespace skips t: mount namespaces are Linux's.
func InMountNamespace(t *testing.T) bool {
	t.Helper()
	t.Skip("needs a Linux mount namespace to mount a read-only or full file system in")
	return false
}

// MountTmpfs is Linux's only.
func MountTmpfs(t *testing.T, _ int) string {
	t.Helper()
	t.Fatal("MountTmpfs needs Linux")
	return ""
}

// Remount is Linux's only.
func Remount(t *testing.T, _ string, _ bool) {
	t.Helper()
	t.Fatal("Remount needs Linux")
}

// ReadOnlyFile is Linux's only.
func ReadOnlyFile(t *testing.T, _ string) func() {
	t.Helper()
	t.Fatal("ReadOnlyFile needs Linux")
	return nil
}
