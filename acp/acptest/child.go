package acptest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Child is a fake child process (the test binary re-executed in a mode:
// Command, or steerabletest.Command) that a test drives line by line over
// its stdin and stdout.
type Child struct {
	t     testing.TB
	Cmd   *exec.Cmd
	Stdin io.WriteCloser
	// Lines carries the child's stdout line by line (32 MiB at most each);
	// it is closed when stdout ends, and Exited then gets Wait's result.
	Lines  chan string
	Exited chan error
}

// StartChild starts path with args and env (after this process's
// environment), its stderr going to stderr (nil discards it). When the
// test ends the child's stdin is closed and it has 10 s to exit before it
// is killed; with mustExit, a kill fails the test.
func StartChild(t testing.TB, path string, args, env []string, stderr io.Writer, mustExit bool) *Child {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	var stdout io.Reader
	if err == nil {
		stdout, err = cmd.StdoutPipe()
	}
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		t.Fatalf("start the fake child %s: %v", path, err)
	}
	c := &Child{t: t, Cmd: cmd, Stdin: stdin, Lines: make(chan string, 10000), Exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			c.Lines <- sc.Text()
		}
		close(c.Lines)
		c.Exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case err := <-c.Exited:
			c.Exited <- err
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			if mustExit {
				t.Error("the fake child did not exit at stdin EOF")
			}
			<-c.Exited
		}
	})
	return c
}

// Send writes line and a newline to the child's stdin.
func (c *Child) Send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.Stdin, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// Next returns the child's next stdout line, failing the test if stdout
// has ended or no line comes within limit.
func (c *Child) Next(limit time.Duration) string {
	c.t.Helper()
	select {
	case l, ok := <-c.Lines:
		if !ok {
			c.t.Fatal("the fake child's stdout ended")
		}
		return l
	case <-time.After(limit):
		c.t.Fatalf("no line from the fake child within %s", limit)
		return ""
	}
}

// Wait returns the child's exit (Wait's error), failing the test if it
// has not exited within limit. It may be called again.
func (c *Child) Wait(limit time.Duration) error {
	c.t.Helper()
	select {
	case err := <-c.Exited:
		c.Exited <- err // for the next caller and the cleanup
		return err
	case <-time.After(limit):
		c.t.Fatal("the fake child did not exit")
		return nil
	}
}
