// Command iconsgen draws the dashboard's icons, a robot face, as PNGs:
// the web app manifest's icons (192 and 512 px, plain and maskable), the
// apple-touch-icon (180 px) and the favicon (32 px). The PNGs are
// committed under admin/ui/static/icons; `go generate ./admin/ui/`
// remakes them.
package main

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
)

// Icon is one file: its name, size in pixels and background shape.
type Icon struct {
	Name string
	Size int
	// FullBleed fills the whole square (maskable icons, whose mask the
	// platform chooses, and the apple-touch-icon, which iOS rounds);
	// otherwise the background is a rounded square.
	FullBleed bool
}

// Icons are the files the dashboard serves.
var Icons = []Icon{
	{"icon-192.png", 192, false},
	{"icon-512.png", 512, false},
	{"icon-maskable-192.png", 192, true},
	{"icon-maskable-512.png", 512, true},
	{"apple-touch-icon.png", 180, true},
	{"favicon-32.png", 32, false},
}

var (
	background = color.NRGBA{0x3b, 0x6f, 0xd8, 0xff} // the page's accent
	face       = color.NRGBA{0xf6, 0xf7, 0xf9, 0xff}
	ink        = color.NRGBA{0x1d, 0x24, 0x30, 0xff}
	cheek      = color.NRGBA{0xf2, 0x9b, 0xb0, 0xff}
	bulb       = color.NRGBA{0xff, 0xd1, 0x66, 0xff}
)

// shape reports whether the point (x, y), in units of the icon's width,
// is inside.
type shape func(x, y float64) bool

func circle(cx, cy, r float64) shape {
	return func(x, y float64) bool { return math.Hypot(x-cx, y-cy) <= r }
}

// roundRect is the rectangle centred on (cx, cy) with half sizes hw, hh
// and corner radius r.
func roundRect(cx, cy, hw, hh, r float64) shape {
	return func(x, y float64) bool {
		dx := math.Max(math.Abs(x-cx)-(hw-r), 0)
		dy := math.Max(math.Abs(y-cy)-(hh-r), 0)
		return math.Abs(x-cx) <= hw && math.Abs(y-cy) <= hh && math.Hypot(dx, dy) <= r
	}
}

// smile is the lower part of a ring around (cx, cy).
func smile(cx, cy, r0, r1, below float64) shape {
	return func(x, y float64) bool {
		d := math.Hypot(x-cx, y-cy)
		return d >= r0 && d <= r1 && y >= below
	}
}

// layer is a shape and its colour; later layers paint over earlier ones.
type layer struct {
	in shape
	c  color.NRGBA
}

// face's layers keep inside the circle of radius 0.4 around the centre,
// the safe zone of a maskable icon.
func layers(fullBleed bool) []layer {
	bg := roundRect(0.5, 0.5, 0.5, 0.5, 0.22)
	if fullBleed {
		bg = func(float64, float64) bool { return true }
	}
	return []layer{
		{bg, background},
		{roundRect(0.5, 0.27, 0.016, 0.08, 0.016), face}, // antenna
		{circle(0.5, 0.18, 0.05), bulb},
		{roundRect(0.215, 0.56, 0.035, 0.07, 0.02), face}, // ears
		{roundRect(0.785, 0.56, 0.035, 0.07, 0.02), face},
		{roundRect(0.5, 0.56, 0.27, 0.22, 0.09), face}, // head
		{circle(0.4, 0.52, 0.05), ink},                 // eyes
		{circle(0.6, 0.52, 0.05), ink},
		{circle(0.335, 0.63, 0.032), cheek},
		{circle(0.665, 0.63, 0.032), cheek},
		{smile(0.5, 0.585, 0.07, 0.1, 0.625), ink},
	}
}

// Draw paints an icon, each pixel the average of 4×4 samples.
func Draw(ic Icon) *image.NRGBA {
	const ss = 4
	img := image.NewNRGBA(image.Rect(0, 0, ic.Size, ic.Size))
	ls := layers(ic.FullBleed)
	n := float64(ic.Size)
	for py := range ic.Size {
		for px := range ic.Size {
			var r, g, b, a float64 // premultiplied sums
			for sy := range ss {
				for sx := range ss {
					x := (float64(px) + (float64(sx)+0.5)/ss) / n
					y := (float64(py) + (float64(sy)+0.5)/ss) / n
					for i := len(ls) - 1; i >= 0; i-- {
						if ls[i].in(x, y) {
							c := ls[i].c
							r, g, b, a = r+float64(c.R), g+float64(c.G), b+float64(c.B), a+255
							break
						}
					}
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{uint8(math.Round(r * 255 / a)), uint8(math.Round(g * 255 / a)),
				uint8(math.Round(b * 255 / a)), uint8(math.Round(a / ss / ss))})
		}
	}
	return img
}

func main() {
	out := flag.String("out", "static/icons", "directory to write the icons to")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "iconsgen:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	for _, ic := range Icons {
		f, err := os.Create(filepath.Join(dir, ic.Name)) // #nosec G304 -- the operator's output directory
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		err = (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(f, Draw(ic))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", ic.Name, err)
		}
	}
	return nil
}
