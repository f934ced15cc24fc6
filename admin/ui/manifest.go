package ui

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// The phone install: a web app manifest, so "Add to Home Screen" gives
// the dashboard an icon and a standalone window. The icons are drawn by
// ./internal/iconsgen and served from /ui/static/icons/.
//
// The manifest and the icons are behind the same rule as the page. A
// browser fetches a manifest without credentials unless its <link> says
// crossorigin="use-credentials" (index.html does), so on a dashboard with
// a password the manifest is fetched with the Basic auth the page was
// opened with.

//go:generate go run ./internal/iconsgen -out static/icons

// manifestJSON is GET /ui/manifest.webmanifest.
var manifestJSON = []byte(`{
  "name": "Dotty — live",
  "short_name": "Dotty",
  "description": "Dotty's dashboard: controls, live perception and voice turns.",
  "id": "/ui/",
  "start_url": "/ui/",
  "scope": "/ui/",
  "display": "standalone",
  "background_color": "#f6f7f9",
  "theme_color": "#3b6fd8",
  "icons": [
    {"src": "/ui/static/icons/icon-192.png", "sizes": "192x192", "type": "image/png", "purpose": "any"},
    {"src": "/ui/static/icons/icon-512.png", "sizes": "512x512", "type": "image/png", "purpose": "any"},
    {"src": "/ui/static/icons/icon-maskable-192.png", "sizes": "192x192", "type": "image/png", "purpose": "maskable"},
    {"src": "/ui/static/icons/icon-maskable-512.png", "sizes": "512x512", "type": "image/png", "purpose": "maskable"}
  ]
}
`)

func (u *UI) manifest(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "application/manifest+json", manifestJSON)
}
