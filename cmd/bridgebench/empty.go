package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
)

// emptyReply is what the empty handler answers a voice request: the
// bridge's reply shape, so both send the same bytes.
const emptyReply = `{"response":"😊 You said: hello from bench","session_id":"bench-0","emotion":"happy"}`

// emptyEnv, set in its environment, makes this program the empty server.
const emptyEnv = "BRIDGEBENCH_EMPTY_SERVER"

// maybeServeEmpty serves the empty handler and exits when this process
// was started as the empty server.
func maybeServeEmpty() {
	if os.Getenv(emptyEnv) != "1" {
		return
	}
	if err := serveEmpty(); err != nil {
		fmt.Fprintln(os.Stderr, "bridgebench:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveEmpty is the floor the bridge is read against: a bare net/http
// server in its own process, as the bridge is, whose handler reads the
// body and answers 204 to a perception event and the reply shape to
// anything else. It prints its address and serves until stdin closes.
func serveEmpty() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/api/perception/event" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, emptyReply)
	})}
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); _ = srv.Close() }()
	fmt.Println("listening", ln.Addr().String())
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// startEmpty runs serveEmpty in a child process (this program again) and
// returns its base URL, its process id (its CPU time is read) and a stop
// function.
func startEmpty() (string, int, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = []string{emptyEnv + "=1"}
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	addr, stop, err := startListening(cmd)
	if err != nil {
		return "", 0, nil, fmt.Errorf("empty server: %w", err)
	}
	return "http://" + addr, cmd.Process.Pid, stop, nil
}

// startListening starts cmd, a program that prints "listening ADDR" on
// stdout once it serves and exits when its stdin closes, and returns ADDR
// and a stop function that closes its stdin and waits for it.
func startListening(cmd *exec.Cmd) (string, func(), error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = stdin.Close(); _ = cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		stop()
		return "", nil, fmt.Errorf("did not start: %q %v", line, err)
	}
	return addr, stop, nil
}
