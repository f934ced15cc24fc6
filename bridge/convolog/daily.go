package convolog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/metric"
)

// DailyConfig configures one set of daily NDJSON files,
// <Dir>/<Prefix>-YYYY-MM-DD.ndjson.
type DailyConfig struct {
	// Dir is the directory (CONVO_LOG_DIR for every file bridge.py wrote),
	// created 0700 when missing.
	Dir string
	// Prefix names the set: "convo", "security", "scene-synthesis", …
	Prefix string
	// Location is the zone of the file dates.
	Location *time.Location
	// Logger receives write failures; nil discards.
	Logger hclog.Logger
	// Failures counts records that could not be written
	// (dotty_journal_write_failures_total{file=Prefix}); nil counts nothing.
	Failures prometheus.Counter
	// What names the files in log lines ("the security log; the watch
	// goes on without it"); its first clause, without "the", names them on
	// /health ("security log"). Empty means "the <Prefix> log".
	What string
	// Health is the conditions set: one key per directory fails while the
	// directory cannot be created or takes no file (read-only, full, no
	// permission: every file set in it shares the key, so the cause is
	// said once), and the file set's own key while its records cannot be
	// written for another reason. Each carries a re-check where an honest
	// one exists (health.DirCheck, health.Appendable). Nil keeps a private
	// set, so the log still says each cause once.
	Health *health.Conditions
}

// Daily appends JSON records, one line each, to the file of their date.
// Each record is one write(2) on a file opened O_APPEND under the set's
// lock, so concurrent writers never interleave or tear lines. The day's
// file stays open between records (opening, chmod-ing and closing it per
// record tripled a voice turn's file system calls); at most once a
// second a write checks that the path still names the open file (moved
// away or deleted by hand: a new one is created) and is still private. A
// failure is counted, marks the set's health condition (or its
// directory's, when the directory is the cause), and is logged once per
// cause: at Warn when the condition begins, at Debug while it lasts, and
// one Info line when a write succeeds again or the condition's re-check
// passes. It never reaches the caller: a full SD card must not stop the
// robot. Safe for concurrent use.
type Daily struct {
	dir, prefix, what string
	name              string // what, on /health
	loc               *time.Location
	log               hclog.Logger
	failures          prometheus.Counter
	health            *health.Conditions
	fileKey, dirKey   string // the set's conditions

	mu      sync.Mutex
	dirOK   bool
	f       *os.File    // the open file, nil when none
	fpath   string      // f's path
	fstat   os.FileInfo // f's identity when opened
	checked time.Time   // when the path was last checked against f
}

// recheck is how often a write checks the open file against its path.
const recheck = time.Second

// NewDaily returns the file set, creating its directory now; a failure is
// logged and retried at the next write.
func NewDaily(cfg DailyConfig) *Daily {
	d := &Daily{dir: cfg.Dir, prefix: cfg.Prefix, what: cfg.What, loc: cfg.Location, log: cfg.Logger, failures: cfg.Failures,
		health: cfg.Health, fileKey: "daily log " + filepath.Join(cfg.Dir, cfg.Prefix), dirKey: "log directory " + cfg.Dir}
	if d.loc == nil {
		d.loc = time.Local
	}
	if d.log == nil {
		d.log = hclog.NewNullLogger()
	}
	if d.health == nil {
		d.health = health.New()
	}
	if d.what == "" {
		d.what = "the " + d.prefix + " log"
	}
	first, _, _ := strings.Cut(d.what, ";")
	d.name = strings.TrimPrefix(first, "the ")
	d.mu.Lock()
	d.ensureDirLocked()
	d.mu.Unlock()
	return d
}

// Path returns the file a record stamped t goes to.
func (d *Daily) Path(t time.Time) string {
	return filepath.Join(d.dir, d.prefix+"-"+t.In(d.loc).Format("2006-01-02")+".ndjson")
}

// Location is the zone of the file dates.
func (d *Daily) Location() *time.Location { return d.loc }

// Append writes v as one JSON line (raw UTF-8, HTML characters unescaped)
// to the file of t's date.
func (d *Daily) Append(t time.Time, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		d.log.Error("cannot encode a record", "file", d.prefix, "error", err)
		d.count()
		return
	}
	d.appendLine(t, buf.Bytes())
}

// appendLine writes line (ending in a newline) with one write.
func (d *Daily) appendLine(t time.Time, line []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ensureDirLocked() {
		d.count()
		return
	}
	path := d.Path(t)
	if d.f != nil && (d.fpath != path || d.staleLocked(path)) {
		d.closeLocked()
	}
	if d.f == nil {
		if err := d.openLocked(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				d.dirOK = false // removed meanwhile: the next record creates it again
			}
			d.failLocked("cannot open "+d.what, err, health.Appendable(path))
			return
		}
	}
	if _, err := d.f.Write(line); err != nil {
		d.closeLocked() // the next record reopens
		d.failLocked("cannot write "+d.what, err, nil)
		return
	}
	d.health.Recovered(d.log, d.dirKey, "log directory writable again", "dir", d.dir)
	d.health.Recovered(d.log, d.fileKey, d.name+" written again", "path", path)
}

// openLocked opens path for appending. The mode is asserted on open and
// at each check, as bridge.py did after each append, so a file created by
// hand or by an older version ends up private too.
func (d *Daily) openLocked(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600) // #nosec G304 -- the configured directory plus a date we format
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil && st.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil { // a *PathError naming path
		_ = f.Close()
		return err
	}
	d.f, d.fpath, d.fstat, d.checked = f, path, st, time.Now()
	return nil
}

// staleLocked reports, at most once per recheck, whether path no longer
// names the open file; it re-asserts the file's mode when it does.
func (d *Daily) staleLocked(path string) bool {
	now := time.Now()
	if now.Sub(d.checked) < recheck {
		return false
	}
	d.checked = now
	st, err := os.Stat(path)
	if err != nil || !os.SameFile(st, d.fstat) {
		return true
	}
	if st.Mode().Perm() != 0o600 {
		_ = d.f.Chmod(0o600)
	}
	return false
}

func (d *Daily) closeLocked() {
	if d.f != nil {
		_ = d.f.Close()
		d.f, d.fpath, d.fstat = nil, "", nil
	}
}

// Close closes the open file; a later record opens it again.
func (d *Daily) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeLocked()
	return nil
}

// ensureDirLocked creates the directory unless it was made already. Its
// condition is cleared by a record written in it (or its re-check), not
// here: an existing directory may still take no file.
func (d *Daily) ensureDirLocked() bool {
	if d.dirOK {
		return true
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		// Every file set in the directory fails alike: the first says so.
		d.health.Failed(d.log, hclog.Warn, d.dirKey, "log directory "+d.dir, err, d.dirCheck(),
			"cannot create the log directory; the conversation log and the journals in it are not written until it can be", "dir", d.dir)
		return false
	}
	d.dirOK = true
	return true
}

// dirCheck re-checks the directory's condition.
func (d *Daily) dirCheck() health.Check { return func() error { return health.Writable(d.dir) } }

// failLocked counts a record not written and marks the directory failing
// when it is the cause (read-only, full, no permission: every file set in
// it meets the same, and the first says so), else the set, with check
// (nil: cleared by the next record written); msg is logged at Warn when
// the condition begins, at Debug while it lasts. err names the path (an
// *os.PathError).
func (d *Daily) failLocked(msg string, err error, check health.Check) {
	d.count()
	if dir := health.DirCheck(d.dir, err); dir != nil {
		d.health.Failed(d.log, hclog.Warn, d.dirKey, "log directory "+d.dir, err, dir,
			"the log directory takes no file; the conversation log and the journals in it are not written until it does", "dir", d.dir)
		return
	}
	d.health.Failed(d.log, hclog.Warn, d.fileKey, d.name, err, check, msg)
}

func (d *Daily) count() {
	if d.failures != nil {
		d.failures.Inc()
	}
}

// Metrics are the daily files' series.
type Metrics struct {
	// WriteFailures is dotty_journal_write_failures_total{file}: records of
	// a daily NDJSON file set (the label is its prefix) that could not be
	// written.
	WriteFailures *prometheus.CounterVec
}

// Files are the prefixes of the daily file sets the bridge writes, created
// at zero so a dashboard sees each before its first failure.
var Files = []string{"convo", "security", "scene-synthesis", "perception", "dreams", "dances"}

// NewMetrics creates the series on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{WriteFailures: metric.On(reg).CounterVec("dotty_journal_write_failures_total",
		"Records of the daily NDJSON files (conversation, security, scene, idle perception) that could not be written, by file prefix.", "file")}
	metric.Zero(m.WriteFailures.WithLabelValues, Files...)
	return m
}

// Failures returns the counter of one file set; nil for a nil m.
func (m *Metrics) Failures(prefix string) prometheus.Counter {
	if m == nil {
		return nil
	}
	return m.WriteFailures.WithLabelValues(strings.TrimSpace(prefix))
}
