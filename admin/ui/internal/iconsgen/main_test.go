package main

import (
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedIconsAreTheGenerators: the PNGs served are what Draw
// makes now (run `go generate ./admin/ui/` after changing the drawing),
// and a maskable icon keeps its face inside the safe zone.
func TestCommittedIconsAreTheGenerators(t *testing.T) {
	dir := filepath.Join("..", "..", "static", "icons")
	for _, ic := range Icons {
		f, err := os.Open(filepath.Join(dir, ic.Name))
		if err != nil {
			t.Fatalf("%s: %v (run go generate ./admin/ui/)", ic.Name, err)
		}
		got, err := png.Decode(f)
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: %v", ic.Name, err)
		}
		want := Draw(ic)
		if got.Bounds() != want.Bounds() {
			t.Fatalf("%s is %v, want %v", ic.Name, got.Bounds(), want.Bounds())
		}
		for y := range ic.Size {
			for x := range ic.Size {
				r0, g0, b0, a0 := got.At(x, y).RGBA()
				r1, g1, b1, a1 := want.At(x, y).RGBA()
				if r0 != r1 || g0 != g1 || b0 != b1 || a0 != a1 {
					t.Fatalf("%s differs from the generator's at (%d,%d): run go generate ./admin/ui/", ic.Name, x, y)
				}
			}
		}
		if ic.FullBleed {
			outsideSafeZone(t, ic, want)
		}
	}
}

// outsideSafeZone checks that every pixel outside the circle of radius
// 40 % of the width (the part a platform's mask may cut) is background.
func outsideSafeZone(t *testing.T, ic Icon, img *image.NRGBA) {
	t.Helper()
	n := float64(ic.Size)
	for y := range ic.Size {
		for x := range ic.Size {
			// The pixel's nearest corner to the centre is outside too.
			dx := math.Max(math.Abs(float64(x)+0.5-n/2)-0.5, 0)
			dy := math.Max(math.Abs(float64(y)+0.5-n/2)-0.5, 0)
			if math.Hypot(dx, dy) <= 0.4*n {
				continue
			}
			if c := img.NRGBAAt(x, y); c != background {
				t.Fatalf("%s: pixel (%d,%d) outside the safe zone is %v, not the background", ic.Name, x, y, c)
			}
		}
	}
}
