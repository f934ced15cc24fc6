package convolog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanTail reads only the tail of a big file, drops the line cut by
// the start and the lines past the line limit, and reports a missing file.
func TestScanTail(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, `{"ts":"%03d","type":"dance","reflection":"r%03d"}`+"\n", i, i)
	}
	path := filepath.Join(dir, "big.ndjson")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	lineLen := int64(len(`{"ts":"000","type":"dance","reflection":"r000"}` + "\n"))
	for _, tc := range []struct {
		max, maxLine int64
		first        string
		n            int
	}{
		{lineLen * 10, 1 << 10, "090", 10},    // starts exactly on a line
		{lineLen*10 + 5, 1 << 10, "090", 10},  // starts inside line 89: dropped
		{lineLen*10 - 1, 1 << 10, "091", 9},   // starts inside line 90: dropped
		{lineLen * 1000, 1 << 10, "000", 100}, // the whole file
		{lineLen * 1000, lineLen - 2, "", 0},  // every line too long
	} {
		var seen []string
		if err := ScanTail(path, tc.max, tc.maxLine, func(l []byte) {
			var r struct {
				TS string `json:"ts"`
			}
			_ = json.Unmarshal(l, &r)
			seen = append(seen, r.TS)
		}); err != nil {
			t.Fatal(err)
		}
		if len(seen) != tc.n || (tc.n > 0 && seen[0] != tc.first) {
			t.Errorf("max %d: %d lines from %v", tc.max, len(seen), seen[:min(len(seen), 1)])
		}
	}
	if err := ScanTail(filepath.Join(dir, "none"), 10, 10, func([]byte) {}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
