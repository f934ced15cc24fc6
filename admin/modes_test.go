package admin

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestKidModeStateFile(t *testing.T) {
	tests := []struct {
		name    string
		content *string
		def     bool
		want    bool
	}{
		{"missing uses the default on", nil, true, true},
		{"missing uses the default off", nil, false, false},
		{"true", ptr("true"), false, true},
		{"YES with newline", ptr(" YES\n"), false, true},
		{"1", ptr("1"), false, true},
		{"false overrides default", ptr("false"), true, false},
		{"no", ptr("No"), true, false},
		{"0", ptr("0"), true, false},
		{"garbage falls back", ptr("maybe"), true, true},
		{"empty falls back", ptr(""), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kid-mode")
			if tt.content != nil {
				if err := os.WriteFile(path, []byte(*tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
			m := NewModes(ModesConfig{KidStatePath: path, KidDefault: tt.def, Metrics: &Metrics{KidModeActive: g}})
			if got := m.KidMode(); got != tt.want {
				t.Errorf("KidMode = %v, want %v", got, tt.want)
			}
			if v := testutil.ToFloat64(g); (v == 1) != tt.want {
				t.Errorf("gauge = %v", v)
			}
		})
	}
}

func TestModesAreLiveAndWritable(t *testing.T) {
	dir := t.TempDir()
	kid, smart := filepath.Join(dir, "state", "kid-mode"), filepath.Join(dir, "state", "smart-mode")
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	m := NewModes(ModesConfig{KidStatePath: kid, KidDefault: true, SmartStatePath: smart, Metrics: &Metrics{KidModeActive: g}})
	if !m.KidMode() || m.SmartMode() {
		t.Fatal("defaults wrong")
	}
	if err := m.SetKidMode(false); err != nil {
		t.Fatal(err)
	}
	if m.KidMode() || testutil.ToFloat64(g) != 0 {
		t.Error("SetKidMode(false) not visible")
	}
	b, _ := os.ReadFile(kid)
	if string(b) != "false" {
		t.Errorf("state file %q, want false without newline", b)
	}
	// Another writer changes the file: the next read sees it.
	if err := os.WriteFile(kid, []byte("true"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !m.KidMode() || testutil.ToFloat64(g) != 1 {
		t.Error("external change not seen")
	}
	if err := m.SetSmartMode(true); err != nil || !m.SmartMode() {
		t.Errorf("smart mode: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(kid))
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestModesConcurrentReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kid-mode")
	m := NewModes(ModesConfig{KidStatePath: path})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				_ = m.KidMode()
				if j%50 == 0 {
					_ = m.SetKidMode(j%100 == 0)
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkKidMode(b *testing.B) {
	path := filepath.Join(b.TempDir(), "kid-mode")
	_ = os.WriteFile(path, []byte("true"), 0o600)
	m := NewModes(ModesConfig{KidStatePath: path})
	for i := 0; i < b.N; i++ {
		_ = m.KidMode()
	}
}

func ptr(s string) *string { return &s }

func TestSmartModeStored(t *testing.T) {
	dir := t.TempDir()
	m := NewModes(ModesConfig{SmartStatePath: filepath.Join(dir, "smart")})
	if _, ok := m.SmartModeStored(); ok {
		t.Error("a missing file counts as stored")
	}
	if err := m.SetSmartMode(true); err != nil {
		t.Fatal(err)
	}
	if on, ok := m.SmartModeStored(); !on || !ok {
		t.Errorf("stored %v %v", on, ok)
	}
	os.WriteFile(filepath.Join(dir, "smart"), []byte("maybe"), 0o600)
	if _, ok := m.SmartModeStored(); ok {
		t.Error("an unrecognised value counts as stored")
	}
}
