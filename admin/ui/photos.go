package ui

import (
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// Photo is a robot's latest photo as the dashboard shows it.
type Photo struct {
	Device      string
	Description string
	At          time.Time
	Size        int    // bytes of the JPEG
	JPEG        []byte // empty in lists
}

// photoInfo is one entry of GET /ui/api/photos.
type photoInfo struct {
	Device      string `json:"device_id"`
	Description string `json:"description"`
	At          string `json:"at"`
	Bytes       int    `json:"bytes"`
}

// unsafeName are the characters kept out of a download's file name.
var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// photos is GET /ui/api/photos: the devices with a photo, newest first.
func (u *UI) photos(c echo.Context) error {
	out := []photoInfo{}
	if u.cfg.PhotoList != nil {
		for _, p := range u.cfg.PhotoList() {
			out = append(out, photoInfo{Device: p.Device, Description: p.Description,
				At: p.At.In(u.cfg.Location).Format(time.RFC3339), Bytes: p.Size})
		}
	}
	return httpapi.WriteJSON(c, http.StatusOK, out)
}

// photo is GET /ui/api/photo?device_id=[&download=1]: the device's latest
// photo (the newest of any device without device_id) as image/jpeg.
func (u *UI) photo(c echo.Context) error {
	if u.cfg.LatestPhoto == nil {
		return httpapi.NewError(http.StatusNotFound, "no photo yet")
	}
	p, ok := u.cfg.LatestPhoto(c.QueryParam("device_id"))
	if !ok || len(p.JPEG) == 0 {
		return httpapi.NewError(http.StatusNotFound, "no photo yet")
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if c.QueryParam("download") == "1" {
		name := "dotty-" + unsafeName().ReplaceAllString(p.Device, "_") + "-" + p.At.In(u.cfg.Location).Format("20060102-150405") + ".jpg"
		h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	}
	return c.Blob(http.StatusOK, "image/jpeg", p.JPEG)
}
