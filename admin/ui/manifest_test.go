package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"strings"
	"testing"
)

// webManifest is what the tests read of the manifest.
type webManifest struct {
	Name            string `json:"name"`
	ShortName       string `json:"short_name"`
	StartURL        string `json:"start_url"`
	Scope           string `json:"scope"`
	Display         string `json:"display"`
	ThemeColor      string `json:"theme_color"`
	BackgroundColor string `json:"background_color"`
	Icons           []struct {
		Src     string `json:"src"`
		Sizes   string `json:"sizes"`
		Type    string `json:"type"`
		Purpose string `json:"purpose"`
	} `json:"icons"`
}

// pngSize fetches a PNG and returns its size.
func pngSize(t *testing.T, url, user, pass string) (int, int) {
	t.Helper()
	resp, body := get(t, url, user, pass)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	img, err := png.Decode(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return img.Bounds().Dx(), img.Bounds().Dy()
}

// TestInstallManifestAndIcons: the page links a manifest (fetched with
// credentials), the apple-touch-icon and the favicon; the manifest makes
// a standalone app starting at /ui/ with plain and maskable icons of 192
// and 512 px, each a PNG of its stated size; all of it is behind the
// dashboard's password when one is set.
func TestInstallManifestAndIcons(t *testing.T) {
	e := newEnv(t, Config{Access: credentials("nana", "s3cret")})
	_, page := get(t, e.url+"/ui/", "nana", "s3cret")
	for _, tag := range []string{
		`<link rel="manifest" href="/ui/manifest.webmanifest" crossorigin="use-credentials">`,
		`<link rel="apple-touch-icon" sizes="180x180" href="/ui/static/icons/apple-touch-icon.png">`,
		`<link rel="icon" type="image/png" sizes="32x32" href="/ui/static/icons/favicon-32.png">`,
		`<meta name="apple-mobile-web-app-capable" content="yes">`,
		`<meta name="theme-color"`,
	} {
		if !strings.Contains(page, tag) {
			t.Errorf("the page lacks %s", tag)
		}
	}
	if resp, _ := get(t, e.url+"/ui/manifest.webmanifest", "", ""); resp.StatusCode != 401 {
		t.Errorf("manifest without credentials: %d", resp.StatusCode)
	}
	if resp, _ := get(t, e.url+"/ui/static/icons/icon-192.png", "", ""); resp.StatusCode != 401 {
		t.Errorf("icon without credentials: %d", resp.StatusCode)
	}
	resp, body := get(t, e.url+"/ui/manifest.webmanifest", "nana", "s3cret")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/manifest+json" {
		t.Fatalf("manifest: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var m webManifest
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	if m.Name == "" || m.ShortName != "Dotty" || m.StartURL != "/ui/" || m.Scope != "/ui/" || m.Display != "standalone" ||
		m.ThemeColor == "" || m.BackgroundColor == "" {
		t.Errorf("manifest %+v", m)
	}
	have := map[string]bool{}
	for _, ic := range m.Icons {
		w, h := pngSize(t, e.url+ic.Src, "nana", "s3cret")
		if got := fmt.Sprintf("%dx%d", w, h); got != ic.Sizes || ic.Type != "image/png" {
			t.Errorf("%s is %s %s, the manifest says %s %s", ic.Src, got, "image/png", ic.Sizes, ic.Type)
		}
		have[ic.Purpose+" "+ic.Sizes] = true
	}
	for _, want := range []string{"any 192x192", "any 512x512", "maskable 192x192", "maskable 512x512"} {
		if !have[want] {
			t.Errorf("no %s icon in %+v", want, m.Icons)
		}
	}
	for path, size := range map[string]int{"/ui/static/icons/apple-touch-icon.png": 180, "/ui/static/icons/favicon-32.png": 32} {
		if w, h := pngSize(t, e.url+path, "nana", "s3cret"); w != size || h != size {
			t.Errorf("%s is %dx%d", path, w, h)
		}
	}
}
