package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/benchkit"
)

// TestMain lets the test binary be the empty server, as the command is.
func TestMain(m *testing.M) {
	maybeServeEmpty()
	os.Exit(m.Run())
}

// TestBenchSmoke runs the whole bench with tiny counts against a freshly
// built binary: every row is measured and printed.
func TestBenchSmoke(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "zeroclaw-bridge")
	if err := benchkit.Build(bin, false); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(options{bin: bin, turns: 20, cpuTurns: 20, conc: 2, events: 2000, sse: 5, sseRate: 100}, &out); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"demo agent alone", "empty handler (net/http, own process)", "empty handler ingest", "% of the empty handler", "start to healthy", "idle RSS", "existing brain.db", "idle RSS floor: net/http alone", "idle RSS floor: + openai-go", "buffered turn, 1 session",
		"streaming turn, 2 sessions", "bridge CPU per buffered turn", "bridge CPU per streamed turn", "CPU per event", "first chunk on the wire", "final frame on the wire", "agent crash (SIGKILL) to next good turn", "barge-in → next turn's first chunk", "perception ingest, 8 connections",
		"SSE delivery, 5 feed clients", "(1000 of 1000 frames)", "peak RSS", "targets, as ratios to the floors of this run"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("report lacks %q:\n%s", row, out.String())
		}
	}
	// Each target is one line with its figure, its bound and a verdict (the
	// CPU ratio may instead say the run was too short to count).
	_, targets, _ := strings.Cut(out.String(), "targets, as ratios")
	for _, want := range []string{
		"bridge CPU per buffered turn ÷ the empty handler's CPU per request",
		"buffered turn p50, over the empty handler",
		"streamed turn's final frame p50, over the empty handler",
		"perception ingest, % of the empty handler's events/s",
		"idle RSS (existing brain.db) over the library floor",
	} {
		line := ""
		for _, l := range strings.Split(targets, "\n") {
			if strings.HasPrefix(l, want) {
				line = l
			}
		}
		if !regexp.MustCompile(`(≤|≥) -?[0-9.]+( µs| %| MiB|×)  (met|missed)$|raise -cpu-turns$`).MatchString(line) {
			t.Errorf("target %q printed as %q, want its figure, bound and verdict", want, line)
		}
	}
}
