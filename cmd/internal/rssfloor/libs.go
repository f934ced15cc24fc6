//go:build libs

package main

import (
	"io"
	"net"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func init() {
	serve = func(ln net.Listener) error {
		// The line is formatted as the bridge formats its own, and discarded.
		log := hclog.New(&hclog.LoggerOptions{Name: "rssfloor", Level: hclog.Info, Output: io.Discard})
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		b := backoff.NewExponentialBackOff()
		b.MaxInterval = time.Second
		log.Info("floor", "acp_protocol", acpsdk.ProtocolVersionNumber, "backoff", b.NextBackOff() > 0)
		_ = acpsdk.NewClientSideConnection // linked as the bridge links it
		e := echo.New()
		e.HideBanner, e.HidePort = true, true
		e.GET("/health", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
		e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
		e.Listener = ln
		return e.Start("")
	}
}
