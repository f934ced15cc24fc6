package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# HELP x\ndotty_perception_dropped_total{consumer=\"purr_player\"} 3\ndotty_sse_evictions_total 1\nother 5\n")
	}))
	defer srv.Close()
	m, err := scrape(srv.Client(), srv.URL)
	if err != nil || m["purr_player"] != 3 || m["sse_evictions"] != 1 || len(m) != 2 {
		t.Errorf("scrape = %v, %v", m, err)
	}
}
