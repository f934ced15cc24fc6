package convolog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health/healthtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDailyConcurrentAppendsNeverTear: 16 writers append records of up to
// 96 KiB (more than a pipe buffer) at once; every line of the file is one
// whole record, and all of them are there.
func TestDailyConcurrentAppendsNeverTear(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	d := NewDaily(DailyConfig{Dir: dir, Prefix: "security", Location: brisbane})
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	type rec struct {
		Writer int    `json:"writer"`
		N      int    `json:"n"`
		Pad    string `json:"pad"`
	}
	const writers, each = 16, 20
	testkit.Together(writers, each, func(w, n int) {
		d.Append(at, rec{Writer: w, N: n, Pad: strings.Repeat("<é>", (w*each+n)%4096*8)})
	})
	f, err := os.Open(filepath.Join(dir, "security-2026-11-25.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := map[[2]int]bool{}
	for sc.Scan() {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("torn line of %d bytes: %v", len(sc.Bytes()), err)
		}
		if !strings.HasPrefix(r.Pad, "<é>") && r.Pad != "" {
			t.Fatalf("record %d/%d corrupted", r.Writer, r.N)
		}
		seen[[2]int{r.Writer, r.N}] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct records, want %d", len(seen), writers*each)
	}
	if st, _ := f.Stat(); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if raw, _ := os.ReadFile(f.Name()); !bytes.Contains(raw, []byte(`"pad":"<é>`)) {
		t.Error("HTML characters or UTF-8 escaped")
	}
}

// TestDailyFailureCountedAndRecovers: a file set whose directory cannot be
// made counts every lost record, warns once, and writes again once the
// path is usable.
func TestDailyFailureCountedAndRecovers(t *testing.T) {
	root := t.TempDir()
	blocker := testkit.Blocker(t, filepath.Join(root, "logs"))
	var buf bytes.Buffer
	m := NewMetrics(prometheus.NewRegistry())
	d := NewDaily(DailyConfig{Dir: blocker, Prefix: "scene-synthesis", Logger: hclog.New(&hclog.LoggerOptions{Output: &buf}),
		Failures: m.Failures("scene-synthesis")})
	at := time.Now()
	d.Append(at, map[string]int{"a": 1})
	d.Append(at, map[string]int{"a": 2})
	if n := testutil.ToFloat64(m.WriteFailures.WithLabelValues("scene-synthesis")); n != 2 { // two records lost; the failed creation at start lost none
		t.Errorf("failures %v, want 2", n)
	}
	if n := strings.Count(buf.String(), "[WARN]"); n != 1 {
		t.Errorf("%d warnings, want one:\n%s", n, buf.String())
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	d.Append(at, map[string]int{"a": 3})
	if b, err := os.ReadFile(d.Path(at)); err != nil || string(b) != "{\"a\":3}\n" {
		t.Errorf("after recovery: %q %v", b, err)
	}
	if n := testutil.ToFloat64(m.WriteFailures.WithLabelValues("convo")); n != 0 {
		t.Errorf("convo failures %v", n)
	}
	// An unencodable value is counted too, and nothing is written.
	d.Append(at, map[string]any{"bad": func() {}})
	if n := testutil.ToFloat64(m.WriteFailures.WithLabelValues("scene-synthesis")); n != 3 {
		t.Errorf("failures after a bad value %v, want 3", n)
	}
}

// TestDailyHealthConditions: file sets sharing a directory that cannot be
// made say so in one Warn line and one /health problem; once it can be,
// the condition's re-check clears it with one Info line, before any record
// is written. A file that cannot be opened is its own set's problem, said
// once with the error text once, re-checked by opening it (without
// creating it) and cleared once it opens; the records after that log
// nothing more.
func TestDailyHealthConditions(t *testing.T) {
	root := t.TempDir()
	blocker := testkit.Blocker(t, filepath.Join(root, "state"))
	dir := filepath.Join(blocker, "logs") // under a regular file: ENOTDIR, even for root
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	conds := healthtest.New(t, nil)
	convo := New(Config{Dir: dir, Logger: log, Health: conds.Conditions})
	sets := []*Daily{convo.daily}
	for _, prefix := range []string{"security", "scene-synthesis", "perception"} {
		sets = append(sets, NewDaily(DailyConfig{Dir: dir, Prefix: prefix, Logger: log, Health: conds.Conditions}))
	}
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for range 3 {
		convo.Write(Record{TS: at, ResponseText: "x"})
		for _, d := range sets[1:] {
			d.Append(at, map[string]int{"a": 1})
		}
	}
	wantDir := "log directory " + dir + ": mkdir " + blocker + ": not a directory"
	if got := conds.Problems(); len(got) != 1 || got[0] != wantDir {
		t.Errorf("problems %q, want [%q]", got, wantDir)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "[WARN]  cannot create the log directory") ||
		strings.Count(logs.String(), "not a directory") != 1 {
		t.Errorf("want one Warn line for the directory, got:\n%s", logs.String())
	}
	// The blocker goes: the re-check clears the directory's condition
	// without a record.
	conds.Recovers(t, 1, func() error { logs.Reset(); return os.Remove(blocker) })
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "[INFO]  log directory "+dir+" recovered: its re-check passed: problem=") {
		t.Errorf("want one Info line for the re-checked directory, got:\n%s", logs.String())
	}

	// The conversation log's file cannot be opened (a directory is in its
	// place): its own problem, the other sets write.
	if err := os.MkdirAll(convo.Path(at), 0o700); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	for range 3 {
		convo.Write(Record{TS: at, ResponseText: "x"})
		sets[1].Append(at, map[string]int{"a": 1})
	}
	wantFile := "conversation log: open " + convo.Path(at) + ": is a directory"
	if got := conds.Problems(); len(got) != 1 || got[0] != wantFile {
		t.Errorf("problems %q, want [%q]", got, wantFile)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "[WARN]  cannot open the conversation log; turns continue without it: error=") ||
		strings.Count(lines[0], convo.Path(at)) != 1 {
		t.Errorf("want one Warn naming the file once, got:\n%s", logs.String())
	}
	conds.Recovers(t, 1, func() error { logs.Reset(); return os.Remove(convo.Path(at)) })
	if _, err := os.Stat(convo.Path(at)); err == nil {
		t.Error("the re-check created the conversation log")
	}
	convo.Write(Record{TS: at, ResponseText: "x"})
	convo.Write(Record{TS: at, ResponseText: "y"})
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "[INFO]  conversation log recovered: its re-check passed: problem=") {
		t.Errorf("want one Info line for the recovery, got:\n%s", logs.String())
	}
	if b, err := os.ReadFile(convo.Path(at)); err != nil || strings.Count(string(b), "\n") != 2 {
		t.Errorf("conversation log after the recovery: %q %v", b, err)
	}
}

// TestDailyUnwritableDirectoryOneCause: a log directory that exists but
// takes no file — a read-only file system, then a full one, which root
// meets too — is one cause for every file set in it: one Warn line, one
// /health problem, every lost record counted; once it is writable (has
// room) again its re-check clears it with one Info line, no record
// needed, and the next records are written.
func TestDailyUnwritableDirectoryOneCause(t *testing.T) {
	if !testkit.InMountNamespace(t) {
		return
	}
	mnt := testkit.MountTmpfs(t, 256<<10)
	dir := filepath.Join(mnt, "logs")
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	conds := healthtest.New(t, nil)
	m := NewMetrics(prometheus.NewRegistry())
	var sets []*Daily
	for _, prefix := range Files {
		d := NewDaily(DailyConfig{Dir: dir, Prefix: prefix, Logger: log, Health: conds.Conditions, Failures: m.Failures(prefix)})
		t.Cleanup(func() { _ = d.Close() }) // before the unmount
		sets = append(sets, d)
	}
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	appendAll := func() {
		for range 2 {
			for _, d := range sets {
				d.Append(at, map[string]string{"a": strings.Repeat("x", 5000)}) // a new page each: a full tmpfs has none
			}
		}
	}
	lost := func() (n float64) {
		for _, f := range Files {
			n += testutil.ToFloat64(m.WriteFailures.WithLabelValues(f))
		}
		return n
	}

	for _, c := range []struct {
		name, errText string
		block, fix    func()
	}{
		{"read-only", "read-only file system",
			func() { testkit.Remount(t, mnt, true) }, func() { testkit.Remount(t, mnt, false) }},
		{"full", "no space left on device",
			func() {
				if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, 512<<10), 0o600); err == nil {
					t.Fatal("the filler fit in the tmpfs")
				}
			},
			func() {
				if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		for _, d := range sets {
			_ = d.Close() // the next record opens its file in the blocked directory
		}
		logs.Reset()
		before := lost()
		c.block()
		appendAll()
		if n := lost() - before; n != float64(2*len(sets)) {
			t.Errorf("%s: %v records counted lost, want %d", c.name, n, 2*len(sets))
		}
		got := conds.Problems()
		if len(got) != 1 || !strings.HasPrefix(got[0], "log directory "+dir+": ") || !strings.HasSuffix(got[0], c.errText) {
			t.Errorf("%s: problems %q, want one for the directory ending %q", c.name, got, c.errText)
		}
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "[WARN]  the log directory takes no file;") ||
			strings.Count(lines[0], c.errText) != 1 {
			t.Errorf("%s: want one Warn line for the directory, got:\n%s", c.name, logs.String())
		}
		conds.Recheck(t)
		if got := conds.Problems(); len(got) != 1 {
			t.Errorf("%s: problems %q after a re-check while blocked, want it kept", c.name, got)
		}

		logs.Reset()
		c.fix()
		conds.Recheck(t)
		if got := conds.Problems(); got != nil {
			t.Errorf("%s: problems %q after the re-check, want none", c.name, got)
		}
		if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
			!strings.Contains(lines[0], "[INFO]  log directory "+dir+" recovered: its re-check passed") {
			t.Errorf("%s: want one Info line for the recovery, got:\n%s", c.name, logs.String())
		}
		before = lost()
		appendAll()
		if n := lost() - before; n != 0 || conds.Problems() != nil {
			t.Errorf("%s: %v records lost after the fix, problems %q", c.name, n, conds.Problems())
		}
	}
}

// TestDailyKeepsTheFileOpenButFollowsThePath: records share one open file;
// once the periodic check runs, a file deleted or made readable by hand is
// replaced or made private again, and no record after the check is lost.
func TestDailyKeepsTheFileOpenButFollowsThePath(t *testing.T) {
	dir := t.TempDir()
	d := NewDaily(DailyConfig{Dir: dir, Prefix: "convo", Location: time.UTC})
	defer d.Close()
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	path := d.Path(at)
	d.Append(at, map[string]int{"n": 1})
	first := d.f
	d.Append(at, map[string]int{"n": 2})
	if d.f != first || first == nil {
		t.Fatal("the file was reopened between two records of the same day")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	d.checked = time.Time{} // a second has passed
	d.Append(at, map[string]int{"n": 3})
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after the check, want 0600", st.Mode().Perm())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	d.checked = time.Time{}
	d.Append(at, map[string]int{"n": 4})
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{\"n\":4}\n" {
		t.Errorf("after the file was deleted: %q, %v; want the new record in a new file", b, err)
	}
	next := at.Add(24 * time.Hour)
	d.Append(next, map[string]int{"n": 5})
	if d.fpath != d.Path(next) {
		t.Errorf("open file %s, want the next day's", d.fpath)
	}
	if b, _ := os.ReadFile(d.Path(next)); string(b) != "{\"n\":5}\n" {
		t.Errorf("next day's file: %q", b)
	}
}
