package convolog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// ScanTail calls fn for each non-blank line (trimmed) of the last maxBytes
// of the file at path; a line longer than maxLine bytes is skipped, and so
// is the line cut by the start. A missing file is fs.ErrNotExist.
func ScanTail(path string, maxBytes, maxLine int64, fn func(line []byte)) error {
	f, err := os.Open(path) // #nosec G304 -- the configured directory plus a date we format
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if size := info.Size(); size > maxBytes {
		// Start just before the last maxBytes and drop the line cut there
		// (only the newline itself when the cut falls between lines).
		if _, err := f.Seek(size-maxBytes-1, io.SeekStart); err != nil {
			return fmt.Errorf("seek: %w", err)
		}
		r.Reset(f)
		if skipLine(r) != nil {
			return nil
		}
	}
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if int64(len(line)+len(chunk)) > maxLine {
				line = line[:0]
				if skipLine(r) != nil {
					return nil
				}
				continue
			}
			line = append(line, chunk...)
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return fmt.Errorf("read: %w", err)
		}
		if int64(len(line)+len(chunk)) <= maxLine {
			line = append(line, chunk...)
			if l := bytes.TrimSpace(line); len(l) > 0 {
				fn(l)
			}
		}
		line = line[:0]
		if err != nil {
			return nil // io.EOF
		}
	}
}

// skipLine discards the rest of the current line; it returns io.EOF when
// the file ends first.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if err == nil {
			return nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}
