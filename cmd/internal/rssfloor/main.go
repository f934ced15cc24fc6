// Command rssfloor is what bridgebench compares the bridge's idle memory
// with: a program that links a chosen set of the bridge's libraries,
// serves /health and /metrics on loopback, and idles. Its build tags pick
// the set:
//
//	(none)      net/http alone
//	libs        + the design card's libraries in use: echo, prometheus
//	            (Go and process collectors), hclog, the ACP SDK, backoff
//	libs,extra  + the other libraries the bridge links at start: openai-go,
//	            the SQLite driver, YAML, the MCP SDK
//
// Most of a Go server's idle memory is pages of its own binary mapped in
// (package initialisation touches every linked package), so these floors
// say how much of the bridge's figure comes with its libraries.
//
// It prints "listening ADDR" on stdout and exits when stdin closes.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
)

// serve is replaced by the libs build with an echo server.
var serve = func(ln net.Listener) error {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}
	mux.HandleFunc("/health", ok)
	mux.HandleFunc("/metrics", ok)
	return http.Serve(ln, mux)
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rssfloor:", err)
		os.Exit(1)
	}
	fmt.Println("listening", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if err := serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "rssfloor:", err)
		os.Exit(1)
	}
}
