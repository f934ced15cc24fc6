package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// UpdateGolden is the environment variable that makes MetricsGolden
// write its file instead of comparing with it (UPDATE_GOLDEN=1 go test).
const UpdateGolden = "UPDATE_GOLDEN"

// MetricsGolden fails the test unless what newMetrics (a package's
// NewMetrics) puts on /metrics is, byte for byte, the package's
// testdata/metrics.txt: see metricsText.
func MetricsGolden[M any](t testing.TB, newMetrics func(prometheus.Registerer) M) {
	t.Helper()
	golden(t, "testdata/metrics.txt", metricsText(t, func(reg prometheus.Registerer) { newMetrics(reg) }))
}

// OpenMetrics is the Accept header of a scraper asking for OpenMetrics.
const OpenMetrics = "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"

// metricsText registers the series register creates on a fresh registry
// and returns all that defines them on /metrics: a sorted line per
// series family a collector describes (its Go type, name, HELP, constant
// and variable label names, so a labelled family without a series yet is
// there too), then the registry's text exposition (types, the series
// created at zero, histogram buckets).
func metricsText(t testing.TB, register func(prometheus.Registerer)) string {
	t.Helper()
	reg := &recordingRegistry{Registry: prometheus.NewRegistry()}
	register(reg)
	var descs []string
	for _, c := range reg.collectors {
		ch := make(chan *prometheus.Desc)
		go func() {
			c.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			descs = append(descs, fmt.Sprintf("%T %s", c, d))
		}
	}
	slices.Sort(descs)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, d := range descs {
		b.WriteString(d + "\n")
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// recordingRegistry is a registry that keeps the collectors registered
// on it.
type recordingRegistry struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recordingRegistry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recordingRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// golden fails the test unless got is the content of the file at path;
// with UPDATE_GOLDEN=1 in the environment it writes got there instead.
func golden(t testing.TB, path, got string) {
	t.Helper()
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if os.Getenv(UpdateGolden) == "1" {
		if err := root.WriteFile(filepath.Base(path), []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := root.ReadFile(filepath.Base(path))
	if err != nil {
		t.Fatalf("%v (%s=1 writes it)", err, UpdateGolden)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got; %s=1 rewrites it):\n%s", path, UpdateGolden, d)
	}
}
