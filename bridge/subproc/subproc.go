// Package subproc holds what the bridge needs to run a helper command the
// operator configured (gws, the xiaozhi restart command): its process
// group killed whole at its deadline, and a bounded tail of its output.
package subproc

import "strings"

// Tail keeps the last Max bytes written to it; Cut reports that earlier
// ones were dropped. exec.Cmd writes to one Tail given as both Stdout and
// Stderr from one goroutine at a time.
type Tail struct {
	Max int
	buf []byte
	cut bool
}

// Write keeps the last Max bytes of everything written.
func (b *Tail) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.cut = true
	}
	return len(p), nil
}

// String is the kept bytes, invalid UTF-8 (a character cut in two) left
// out.
func (b *Tail) String() string { return strings.ToValidUTF8(string(b.buf), "") }

// Cut reports that output before the kept tail was dropped.
func (b *Tail) Cut() bool { return b.cut }
