package testenv

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FreeAddr returns a loopback address with a port that was free a moment ago, for a
// process the test starts.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// CPUTime is the CPU time (user and system) this process has used so far: a benchmark
// whose clients run in the test process reports their share of the machine with it.
func CPUTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Build compiles the main package pkg into dir/name and returns the binary's path.
func Build(tb testing.TB, dir, name, pkg string) string {
	tb.Helper()
	out := filepath.Join(dir, name)
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Start runs the binary at path with env added to the test's environment until the test
// ends (SIGINT, then a kill after 15 s), and returns the path of its log. When the test
// failed, the log's tail is written to the test's output.
func Start(tb testing.TB, path string, env ...string) string {
	tb.Helper()
	return StartProcess(tb, Command{Path: path, Env: env, Stop: os.Interrupt}).LogPath()
}

// Command says how to run a process of a test.
type Command struct {
	// Name names the process in messages and its log file; the binary's base name when empty.
	Name string
	Path string
	Args []string
	// Env is added to the test's environment. It stays the same across restarts, so a
	// process told its address here comes back on the same address.
	Env []string
	// Stop is sent when the test ends. Nil means SIGKILL at once: the quickest, and what
	// tests that crash processes on purpose want anyway. After a gentler signal the process
	// has StopWithin (15 s when zero) to exit before it is killed.
	Stop       os.Signal
	StopWithin time.Duration
	// MustStop fails the test when the process had to be killed after Stop, for tests whose
	// subject is the graceful shutdown.
	MustStop bool
}

// logTail is how much of a process's log a failed test prints.
const logTail = 6000

// Process is a child process of a test that the test may kill (SIGKILL, as in a crash),
// signal, restart with the same arguments and environment, and wait for. Its stdout and
// stderr go to one log file across restarts, whose tail a failed test prints: the process's
// own account is what explains most failures of a multi-process test.
type Process struct {
	c   Command
	log string

	mu     sync.Mutex
	cmd    *exec.Cmd     // the current run; nil once killed
	exited chan struct{} // closed when the current run has been waited for
	err    error         // how the current run ended, once exited is closed
}

// StartProcess starts c and stops it when the test ends (see Command.Stop).
func StartProcess(tb testing.TB, c Command) *Process {
	tb.Helper()
	if c.Name == "" {
		c.Name = filepath.Base(c.Path)
	}
	if c.StopWithin == 0 {
		c.StopWithin = 15 * time.Second
	}
	p := &Process{c: c, log: filepath.Join(tb.TempDir(), c.Name+".log")}
	p.start(tb)
	tb.Cleanup(func() {
		p.stop(tb)
		if tb.Failed() {
			tb.Logf("--- %s log (last %d bytes) ---\n%s", c.Name, logTail, p.Tail(logTail))
		}
	})
	return p
}

func (p *Process) start(tb testing.TB) {
	tb.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(p.c.Path, p.c.Args...)
	cmd.Env = append(os.Environ(), p.c.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		tb.Fatalf("start %s: %v", p.c.Name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.err = cmd, exited, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait() // this goroutine owns the process state
		_ = f.Close()
		p.mu.Lock()
		if p.exited == exited {
			p.err = err
		}
		p.mu.Unlock()
		close(exited)
	}()
}

// stop ends the process when the test ends, as Command.Stop says.
func (p *Process) stop(tb testing.TB) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	if p.c.Stop == nil {
		p.Kill()
		return
	}
	_ = cmd.Process.Signal(p.c.Stop)
	select {
	case <-exited:
	case <-time.After(p.c.StopWithin):
		p.Kill()
		if p.c.MustStop {
			tb.Errorf("%s did not stop within %s of %v", p.c.Name, p.c.StopWithin, p.c.Stop)
		}
	}
}

// Kill sends SIGKILL, so the process dies mid-request as in a crash, and returns once it
// is gone (or after 10 s).
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

// Signal sends sig (SIGTERM to test a graceful shutdown, say) without waiting.
func (p *Process) Signal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		tb.Fatalf("signal %v to %s: it was killed", sig, p.c.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signal %v to %s: %v", sig, p.c.Name, err)
	}
}

// Restart kills the process if it runs and starts it again with the same arguments and
// environment (so on the same address); its output goes on in the same log.
func (p *Process) Restart(tb testing.TB) {
	tb.Helper()
	p.Kill()
	p.start(tb)
}

// Wait waits up to within for the current run to end; exited is false when it still
// runs, err how it ended (nil for exit status 0).
func (p *Process) Wait(within time.Duration) (exited bool, err error) {
	p.mu.Lock()
	done := p.exited
	p.mu.Unlock()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-done:
	default: // an exit that has happened wins over a zero wait
		select {
		case <-done:
		case <-t.C:
			return false, nil
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return true, p.err
}

// WaitReady polls url until it answers 200. It fails the test, with the process's log,
// when the process exits first or within passes.
func (p *Process) WaitReady(tb testing.TB, url string, within time.Duration) {
	tb.Helper()
	p.WaitUntil(tb, url, within, func(ctx context.Context) error { return getOK(ctx, url) })
}

// WaitUntil calls probe every 50 ms until it returns nil. It fails the test, naming what
// and showing the process's log, when the process exits first or within passes.
func (p *Process) WaitUntil(tb testing.TB, what string, within time.Duration, probe func(context.Context) error) {
	tb.Helper()
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := probe(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			_, exit := p.Wait(0)
			tb.Fatalf("%s exited (%v) before %s was ready; last: %v\n--- %s log ---\n%s", p.c.Name, exit, what, err, p.c.Name, p.Tail(logTail))
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: %s not ready within %s; last: %v\n--- %s log ---\n%s", p.c.Name, what, within, err, p.c.Name, p.Tail(logTail))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LogPath is the file the process's output goes to.
func (p *Process) LogPath() string { return p.log }

// Pid is the id of the current run (0 when it was killed), for benchmarks that read the
// process's CPU time from /proc.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Log is what the process has written so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Tail is the last n bytes of what the process has written so far.
func (p *Process) Tail(n int) string {
	s := p.Log()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// WaitFor GETs url with header every 100 ms until ok accepts the answer, and fails the test
// naming what when within passes first. For readiness that is more than a process being up
// (a catalog synced, say); Process.WaitReady is the plain case.
func WaitFor(tb testing.TB, what, url string, header http.Header, within time.Duration, ok func(status int, body []byte) bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	var last string
	for {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			tb.Fatal(err)
		}
		req.Header = header.Clone()
		if resp, err := pollClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ok(resp.StatusCode, b) {
				return
			}
			last = fmt.Sprintf("%d %.300s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not ready after %s; last: %s", what, within, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var pollClient = &http.Client{Timeout: 10 * time.Second}

func getOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := pollClient.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d %s", url, resp.StatusCode, b)
	}
	return nil
}
