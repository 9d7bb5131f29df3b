package testenv_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// TestMain makes the test binary its own child process: with TESTENV_CHILD set it is a
// small HTTP server (or a process that fails at once), so the Process tests run a real
// process without building one.
func TestMain(m *testing.M) {
	switch os.Getenv("TESTENV_CHILD") {
	case "serve":
		serveChild(true)
	case "fail":
		fmt.Println("child: cannot start: no database")
		os.Exit(3)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM, os.Interrupt)
		serveChild(false)
	}
	os.Exit(m.Run())
}

// serveChild answers /readyz and /pid on TESTENV_ADDR and, when it handles SIGTERM, exits
// 0 on it.
func serveChild(handleTerm bool) {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("/pid", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, os.Getpid()) })
	srv := &http.Server{Addr: os.Getenv("TESTENV_ADDR"), Handler: mux}
	if handleTerm {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() {
			<-term
			fmt.Println("child: terminated")
			_ = srv.Shutdown(context.Background())
		}()
	}
	fmt.Printf("child %d: listening on %s\n", os.Getpid(), srv.Addr)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Println("child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func child(t *testing.T, mode string, stop os.Signal) (*testenv.Process, string) {
	addr := testenv.FreeAddr(t)
	p := testenv.StartProcess(t, testenv.Command{Name: "child", Path: os.Args[0], Args: []string{"-test.run=^$"},
		Env: []string{"TESTENV_CHILD=" + mode, "TESTENV_ADDR=" + addr}, Stop: stop, StopWithin: 2 * time.Second})
	return p, "http://" + addr
}

func pid(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/pid")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("/pid answered %q", b)
	}
	return n
}

// TestProcessKillRestart kills a process with SIGKILL (it answers no more and its exit is
// not status 0), restarts it on the same address (a new process answers there) and keeps
// both runs' output in one log.
func TestProcessKillRestart(t *testing.T) {
	p, base := child(t, "serve", nil)
	p.WaitReady(t, base+"/readyz", 30*time.Second)
	first := pid(t, base)

	p.Kill()
	if exited, err := p.Wait(0); !exited || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("after Kill: exited %v, err %v; want killed", exited, err)
	}
	if _, err := http.Get(base + "/readyz"); err == nil {
		t.Errorf("a killed process still answers")
	}

	p.Restart(t)
	p.WaitReady(t, base+"/readyz", 30*time.Second)
	second := pid(t, base)
	if second == first {
		t.Errorf("the restarted process has the killed one's pid %d", first)
	}
	if exited, _ := p.Wait(0); exited {
		t.Errorf("Wait says the restarted process exited")
	}
	log := p.Log()
	for _, id := range []int{first, second} {
		if !strings.Contains(log, fmt.Sprintf("child %d: listening", id)) {
			t.Errorf("the log lacks run %d:\n%s", id, log)
		}
	}
}

// TestProcessSignal sends SIGTERM and sees the process exit with status 0.
func TestProcessSignal(t *testing.T) {
	p, base := child(t, "serve", nil)
	p.WaitReady(t, base+"/readyz", 30*time.Second)
	p.Signal(t, syscall.SIGTERM)
	exited, err := p.Wait(20 * time.Second)
	if !exited || err != nil {
		t.Fatalf("after SIGTERM: exited %v, err %v; want status 0", exited, err)
	}
	if !strings.Contains(p.Log(), "child: terminated") {
		t.Errorf("log %q lacks the child's own account of SIGTERM", p.Log())
	}
}

// recorder is a testing.TB whose Fatalf and Errorf are recorded instead of failing the
// test, to test the helpers' failures.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	fatals []string
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// onGoroutine runs f on a goroutine of its own, so that a recorded Fatalf ends only f.
func onGoroutine(f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	<-done
}

// TestProcessWaitReadyFailsAtExit: a process that dies at once fails WaitReady at once,
// with its exit and its own output in the message, rather than after the deadline.
func TestProcessWaitReadyFailsAtExit(t *testing.T) {
	rec := &recorder{TB: t}
	p, base := child(t, "fail", nil)
	onGoroutine(func() { p.WaitReady(rec, base+"/readyz", 10*time.Minute) })
	if len(rec.fatals) != 1 {
		t.Fatalf("WaitReady on a process that exited: %d failures, want 1", len(rec.fatals))
	}
	msg := rec.fatals[0]
	// "exited" is said only on the exit path, not at the deadline (ten minutes away).
	for _, want := range []string{"exited (exit status 3)", "cannot start: no database"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure %q lacks %q", msg, want)
		}
	}
}

// TestProcessMustStop: a process that ignores its stop signal is killed when the test ends,
// and with MustStop that fails the test.
func TestProcessMustStop(t *testing.T) {
	rec := &recorder{TB: t}
	var p *testenv.Process
	t.Run("stubborn", func(t *testing.T) {
		rec.TB = t
		addr := testenv.FreeAddr(t)
		p = testenv.StartProcess(rec, testenv.Command{Name: "stubborn", Path: os.Args[0], Args: []string{"-test.run=^$"},
			Env:  []string{"TESTENV_CHILD=stubborn", "TESTENV_ADDR=" + addr},
			Stop: syscall.SIGTERM, StopWithin: time.Second, MustStop: true})
		p.WaitReady(t, "http://"+addr+"/readyz", 30*time.Second)
	})
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "did not stop within 1s") {
		t.Errorf("errors %q, want one saying the process did not stop", rec.errors)
	}
	if exited, _ := p.Wait(0); !exited {
		t.Errorf("the stubborn process still runs after the test")
	}
}
