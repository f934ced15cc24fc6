// Command household-sim lives a simulated household's days with the whole
// bridge built in process on a fake clock: four robots in four rooms, a
// family of four with a kid, mornings, school-day security watches, idle
// photos, stories and dances, bedtime dreams, voice turns, kid mode, held
// and approved memories, an agent killed once a day and a model change,
// all through the bridge's real HTTP routes against the fake xiaozhi,
// vision model, calendar and agent. It checks the household's invariants
// as it goes, at each local midnight and at the end, prints a per-day
// report and exits 0 only when every invariant held.
//
// Usage:
//
//	household-sim [-days 7] [-start 2026-03-26] [-seed 1] [-report FILE] [-svg FILE] [-v]
//
// The same binary is the fake agent and the fake gws the bridge starts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/household-sim/fakegws"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/household-sim/report"
)

// zone is the household's: Europe/London changes to summer time on
// Sunday 29 March 2026 at 01:00.
const zone = "Europe/London"

func main() {
	// The children first: the bridge runs this binary as gws and as the agent.
	if fakegws.Handles(os.Args[1:]) {
		os.Exit(fakegws.Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
	}
	acptest.MaybeRunHelper()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command line's.
type options struct {
	days        int
	start       time.Time
	seed        uint64
	report, svg string
	verbose     bool
	keepDir     bool
	loc         *time.Location
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("household-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	start := fs.String("start", "2026-03-26", "first simulated `day` (YYYY-MM-DD, local)")
	fs.IntVar(&o.days, "days", 7, "simulated `days` to live")
	fs.Uint64Var(&o.seed, "seed", 1, "the script's random `seed`")
	fs.StringVar(&o.report, "report", "", "also write the report as Markdown to `file`")
	fs.StringVar(&o.svg, "svg", "", "write the heap and goroutine curves as SVG to `file`")
	fs.BoolVar(&o.verbose, "v", false, "print each step and keep the world's directory")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.days < 1 {
		return o, fmt.Errorf("-days %d: want at least 1", o.days)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return o, fmt.Errorf("time zone %s: %w", zone, err)
	}
	o.loc = loc
	if o.start, err = time.ParseInLocation(time.DateOnly, *start, loc); err != nil {
		return o, fmt.Errorf("-start %q: want YYYY-MM-DD: %w", *start, err)
	}
	o.keepDir = o.verbose
	return o, nil
}

// run is the simulator; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "household-sim:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	table, problems, samples, err := simulate(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "household-sim:", err)
		return 1
	}
	if err := table.Text(stdout); err != nil {
		fmt.Fprintln(stderr, "household-sim:", err)
		return 1
	}
	if o.report != "" {
		if err := writeWith(o.report, table.Markdown); err != nil {
			fmt.Fprintln(stderr, "household-sim:", err)
			return 1
		}
	}
	if o.svg != "" {
		if err := os.WriteFile(o.svg, report.SVG(samples, fmt.Sprintf("household-sim: %d days from %s", o.days, o.start.Format(time.DateOnly))), 0o644); err != nil { // #nosec G306 G703 -- the operator's -svg file, a document
			fmt.Fprintln(stderr, "household-sim:", err)
			return 1
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stdout, "\n%d invariants broken:\n", len(problems))
		for _, p := range problems {
			fmt.Fprintln(stdout, "  -", p)
		}
		return 1
	}
	fmt.Fprintln(stdout, "\nevery invariant held")
	return 0
}

func writeWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path) // #nosec G304 -- the operator's -report file
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// simulate builds the world, lives the days and checks them.
func simulate(ctx context.Context, o options, stderr io.Writer) (report.Table, []string, []report.Sample, error) {
	dir, err := os.MkdirTemp("", "household-sim-")
	if err != nil {
		return report.Table{}, nil, nil, err
	}
	if o.keepDir {
		fmt.Fprintln(stderr, "household-sim: the world is in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	roster, err := parseRoster(householdYAML)
	if err != nil {
		return report.Table{}, nil, nil, err
	}
	end := time.Date(o.start.Year(), o.start.Month(), o.start.Day()+o.days, 0, 0, 0, 0, o.loc)
	steps := script(roster, o.start, o.days, o.seed)
	if err := writeCalendar(dir, roster, o.start, o.days); err != nil {
		return report.Table{}, nil, nil, err
	}
	logLevel := hclog.Warn
	if o.verbose {
		logLevel = hclog.Debug
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "household-sim", Output: stderr, Level: logLevel})
	w, err := newWorld(dir, o.loc, o.start, kidSpans(steps, end), log)
	if err != nil {
		return report.Table{}, nil, nil, err
	}
	defer w.close()
	bridgeLog, err := os.Create(filepath.Join(dir, "bridge.log")) // #nosec G304 -- in the sim's own temporary directory
	if err != nil {
		return report.Table{}, nil, nil, err
	}
	defer bridgeLog.Close()
	bctx, stopBridge := context.WithCancel(ctx)
	defer stopBridge()
	if err := w.start(bctx, bridgeLog); err != nil {
		return report.Table{}, nil, nil, err
	}
	// The first agent starts before the clock moves (its spawn is real work).
	w.busy.Add(1)
	w.awaitAgent(0)
	w.busy.Add(-1)
	s := &sim{w: w, steps: steps, start: o.start, end: end, nextSample: o.start, tl: timeline(steps, o.start, end), verbose: o.verbose,
		convoBytes: map[string]int64{}}
	began := time.Now()
	stats, err := s.drive(ctx)
	took := time.Since(began)
	if err == nil {
		s.sample(end) // the last midnight
	}
	fmt.Fprintf(stderr, "household-sim: %d days in %v real (%.0f× real time): %d steps, %d creeps, %d events, %d abandoned\n",
		o.days, took.Round(time.Millisecond), end.Sub(o.start).Seconds()/took.Seconds(), stats.Steps, stats.Creeps, stats.Events, stats.Abandoned)
	if err != nil {
		return report.Table{}, nil, nil, fmt.Errorf("the drive stopped: %w", err)
	}
	w.http.CloseIdleConnections()
	stopBridge()
	select {
	case err := <-w.stopped:
		if err != nil && !errors.Is(err, context.Canceled) {
			s.problems = append(s.problems, fmt.Sprintf("the bridge ended with %v", err))
		}
	case <-time.After(30 * time.Second):
		s.problems = append(s.problems, "the bridge did not stop within 30 s")
	}
	table := s.finish()
	if stats.Unsettled {
		s.problems = append(s.problems, "the world was still busy at the end")
	}
	return table, s.problems, s.samples, nil
}

// writeCalendar writes the week's calendar for the fake gws: the kid's
// swimming on school days, a parent's appointment, and one summary
// carrying a canary. The child finds the file through the environment.
func writeCalendar(dir string, r Roster, start time.Time, days int) error {
	var evs []fakegws.Event
	kid, _ := r.kid()
	adults := r.adults()
	for i := range days {
		day := time.Date(start.Year(), start.Month(), start.Day()+i, 0, 0, 0, 0, start.Location())
		at := func(h int) time.Time {
			return time.Date(day.Year(), day.Month(), day.Day(), h, 0, 0, 0, day.Location())
		} // wall clock, the DST day too
		evs = append(evs, fakegws.Event{Summary: "[" + adults[0].Name + "] Dentist", Start: at(11), End: at(12)})
		if kid.ID != "" && day.Weekday() != time.Saturday && day.Weekday() != time.Sunday {
			evs = append(evs, fakegws.Event{Summary: "[" + kid.Name + "] Swimming", Start: at(16), End: at(17)})
		}
		if i == 0 {
			evs = append(evs, fakegws.Event{Summary: canaried("[" + adults[len(adults)-1].Name + "] Book club"), Start: at(19), End: at(21)})
		}
	}
	path := filepath.Join(dir, "calendar.json")
	if err := fakegws.Save(path, evs); err != nil {
		return err
	}
	return os.Setenv(fakegws.EventsEnv, path)
}
