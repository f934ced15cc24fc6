package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func table() Table {
	return Table{
		Columns: []string{"greetings", "photos", "turns"},
		Rows: []Row{
			{Date: "2026-03-28", Values: []int64{7, 12, 140}},
			{Date: "2026-03-29", Values: []int64{3, 9, 1200}, Note: "DST | 23 h"},
			{Date: "2026-03-30", Values: []int64{5}},
		},
	}
}

func TestTableRenderings(t *testing.T) {
	for _, c := range []struct {
		name   string
		render func(Table, io.Writer) error
		table  Table
		want   string
	}{
		{"text", Table.Text, table(), "" +
			"date        greetings  photos  turns  note\n" +
			"2026-03-28          7      12    140\n" +
			"2026-03-29          3       9   1200  DST | 23 h\n" +
			"2026-03-30          5\n"},
		{"text without notes", Table.Text,
			Table{Columns: []string{"dreams"}, Rows: []Row{{Date: "2026-03-28", Values: []int64{3}}}},
			"date        dreams\n2026-03-28       3\n"},
		{"markdown", Table.Markdown, table(), "" +
			"| date | greetings | photos | turns | note |\n" +
			"| --- | ---: | ---: | ---: | --- |\n" +
			"| 2026-03-28 | 7 | 12 | 140 |  |\n" +
			"| 2026-03-29 | 3 | 9 | 1200 | DST \\| 23 h |\n" +
			"| 2026-03-30 | 5 |  |  |  |\n"},
	} {
		var b bytes.Buffer
		if err := c.render(c.table, &b); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, b.String(), c.want)
		}
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestWriteErrorsAreReturned(t *testing.T) {
	if err := table().Text(failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Text on a failing writer: %v", err)
	}
	if err := table().Markdown(failWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Markdown on a failing writer: %v", err)
	}
}

// week makes hourly samples over days local days starting at midnight
// of 2026-03-27 in London (the DST change is on the 29th), with f giving
// each sample's values from its hour index.
func week(t *testing.T, days int, f func(h int, s *Sample)) []Sample {
	t.Helper()
	loc, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 27, 0, 0, 0, 0, loc)
	end := time.Date(2026, 3, 27+days, 0, 0, 0, 0, loc)
	var s []Sample
	for h, at := 0, start; at.Before(end); h, at = h+1, at.Add(time.Hour) {
		x := Sample{At: at, Goroutines: 100, FDs: 30, HeapBytes: 40 << 20, Tables: map[string]int{"states": 4}}
		f(h, &x)
		s = append(s, x)
	}
	return s
}

var limits = Limits{Goroutines: 10, FDs: 5, HeapBytes: 8 << 20, TableSlack: 2}

func TestFlatQuietWeekWithSpikes(t *testing.T) {
	s := week(t, 7, func(h int, x *Sample) {
		if h%24 == 13 { // one busy hour a day: a security watch, a burst of turns
			x.Goroutines += 400
			x.HeapBytes += 100 << 20
			x.FDs += 50
		}
	})
	if p := Flat(s, s[24].At, limits); len(p) != 0 {
		t.Fatalf("a flat week with one busy hour a day reported problems: %q", p)
	}
}

func TestFlatReportsEachGrowingSeries(t *testing.T) {
	s := week(t, 7, func(h int, x *Sample) {
		x.Goroutines += h / 4 // +6 a day
		x.FDs += h / 12       // +2 a day
		x.HeapBytes += uint64(h) << 18
		x.Tables["pool"] = h / 24
		if h > 100 {
			x.Tables["waiters"] = 1 // a new table: counted as 0 on the first day
		}
	})
	from := time.Date(2026, 3, 28, 0, 0, 0, 0, s[0].At.Location())
	p := Flat(s, from, limits)
	want := []string{
		"goroutines grew from 108 (median of 2026-03-28) to 138 (median of 2026-04-02), more than the 10 allowed", "open fds grew from", "heap grew from", "table pool grew from 1 (max of 2026-03-28) to 6 (max of 2026-04-02), more than the 2 allowed",
	}
	if len(p) != len(want) {
		t.Fatalf("problems %q, want %d", p, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(p[i], w) {
			t.Errorf("problem %d = %q, want it to start %q", i, p[i], w)
		}
	}
	// Both days and the limit are named; the DST day has 23 samples and
	// does not confuse the grouping.
	for _, s := range []string{"2026-03-28", "2026-04-02", "allowed"} {
		if !strings.Contains(p[0], s) {
			t.Errorf("problem %q does not name %q", p[0], s)
		}
	}
	if !strings.Contains(p[2], "MiB") {
		t.Errorf("heap problem %q is not in MiB", p[2])
	}
}

func TestFlatLimitIsInclusive(t *testing.T) {
	s := week(t, 3, func(h int, x *Sample) {
		if h >= 48 {
			x.Goroutines += limits.Goroutines
			x.Tables["states"] += limits.TableSlack
		}
	})
	if p := Flat(s, s[0].At, limits); len(p) != 0 {
		t.Fatalf("growth equal to the limit reported: %q", p)
	}
	s[len(s)-1].Tables["states"]++
	if p := Flat(s, s[0].At, limits); len(p) != 1 || !strings.HasPrefix(p[0], "table states grew from 4 ") {
		t.Fatalf("growth one past the table slack: %q", p)
	}
}

func TestFlatNeedsTwoDays(t *testing.T) {
	s := week(t, 2, func(h int, x *Sample) { x.Goroutines += h * 100 })
	if p := Flat(s, s[24].At, limits); p != nil {
		t.Fatalf("one day after from: %q, want nothing to compare", p)
	}
	if p := Flat(s, s[0].At, limits); len(p) != 1 {
		t.Fatalf("two days of growing goroutines: %q, want one problem", p)
	}
	if p := Flat(nil, time.Time{}, limits); p != nil {
		t.Fatalf("no samples: %q", p)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want int
	}{{[]int{5}, 5}, {[]int{9, 1, 5}, 5}, {[]int{1, 9, 3, 5}, 4}, {[]int{7, 7}, 7}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	if got := median([]uint64{1 << 63, 1<<63 + 2}); got != 1<<63+1 {
		t.Errorf("median of large uint64 = %d", got)
	}
}

func TestSVGGolden(t *testing.T) {
	s := week(t, 7, func(h int, x *Sample) {
		x.Goroutines += (h * 7) % 23
		x.HeapBytes += uint64((h*13)%31) << 20
	})
	got := SVG(s, "Household week <Europe/London>")
	if again := SVG(s, "Household week <Europe/London>"); !bytes.Equal(got, again) {
		t.Fatal("SVG is not deterministic")
	}
	golden := filepath.Join("testdata", "week.svg.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("SVG differs from %s (run with -update after checking the picture):\n%s", golden, got)
	}
	checkSVG(t, got)
	// One line per midnight inside the week (6), seven day labels, the
	// escaped title, and both series.
	text := string(got)
	if n := strings.Count(text, `stroke="#ccc"`); n != 6 {
		t.Errorf("%d day lines, want 6", n)
	}
	for _, d := range []string{"Mar 27", "Mar 29", "Apr 2", "&lt;Europe/London&gt;", "heap in use (MiB)", "goroutines"} {
		if !strings.Contains(text, d) {
			t.Errorf("SVG lacks %q", d)
		}
	}
	if n := strings.Count(text, "<polyline"); n != 2 {
		t.Errorf("%d polylines, want 2", n)
	}
}

func TestSVGEdgeCases(t *testing.T) {
	empty := SVG(nil, "nothing")
	checkSVG(t, empty)
	if !strings.Contains(string(empty), "no samples") {
		t.Errorf("empty SVG does not say so:\n%s", empty)
	}
	one := SVG([]Sample{{At: time.Date(2026, 3, 27, 5, 0, 0, 0, time.UTC)}}, "one")
	checkSVG(t, one)
	if strings.Contains(string(one), "NaN") || strings.Contains(string(one), "Inf") {
		t.Errorf("one zero sample gives bad numbers:\n%s", one)
	}
}

// checkSVG fails unless b is well-formed XML with an svg root.
func checkSVG(t *testing.T, b []byte) {
	t.Helper()
	var root struct{ XMLName xml.Name }
	if err := xml.Unmarshal(b, &root); err != nil || root.XMLName.Local != "svg" {
		t.Fatalf("not an SVG document (%v, root %q):\n%s", err, root.XMLName.Local, b)
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, -3: 1, 0.3: 0.5, 1: 1, 1.1: 2, 3: 5, 7: 10, 42: 50, 120: 200, 1000: 1000} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}
