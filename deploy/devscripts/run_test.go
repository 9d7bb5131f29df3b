package devscripts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/deploy/checks"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

var bins = testenv.StackBinaries()

func TestMain(m *testing.M) { bins.Main(m) }

// runTree is a copy of what `make run` needs (scripts/run.sh, bin/ with the four binaries, a
// Makefile whose run target calls the script) in a temporary directory, so the script's data
// directory and logs stay out of the checkout.
func runTree(t *testing.T) string {
	t.Helper()
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"bin", "scripts"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts/run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts/run.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for name := range bins.Pkgs {
		if err := os.Symlink(bins.Path(t, name), filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	// The Makefile's own recipe, so that make forwards its signals as it does for `make run`.
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte("run:\n\t@scripts/run.sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runStack is one `make run`: the process group it runs in, the addresses it was given and
// the marker every process it starts inherits in its environment.
type runStack struct {
	cmd    *exec.Cmd
	log    string // the run's output, a file: make, the script and the binaries all write it
	addrs  map[string]string
	marker string
	done   chan error
}

// startRun starts argv (scripts/run.sh, or make run) in dir as the leader of a new process
// group, as a terminal or a supervisor would, with small simulated worlds so that every
// service is ready within seconds.
func startRun(t *testing.T, dir string, argv ...string) *runStack {
	t.Helper()
	var m [8]byte
	_, _ = rand.Read(m[:])
	s := &runStack{log: filepath.Join(t.TempDir(), "run.log"), marker: "SENSORGATE_RUN_TEST=" + hex.EncodeToString(m[:]), done: make(chan error, 1),
		addrs: map[string]string{}}
	env := append(os.Environ(), s.marker, "SIM_STATIONS=2", "SIM_DAYS=1", "STOP_TIMEOUT=20")
	for _, name := range []string{"gateway", "ocean", "weather", "airquality"} {
		s.addrs[name] = testenv.FreeAddr(t)
		env = append(env, strings.ToUpper(name)+"_ADDR="+s.addrs[name])
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Dir, s.cmd.Env = dir, env
	out, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the children hold their own descriptors
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		// Whatever the test found, nothing it started may outlive it.
		for _, pid := range s.leftovers(t) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("--- output of %s ---\n%s", strings.Join(argv, " "), s.output())
		}
	})
	return s
}

// output is what the run printed so far.
func (s *runStack) output() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// waitReady waits for the gateway's /healthz, which run.sh waits for too before it prints
// its banner.
func (s *runStack) waitReady(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.output(), "sensorgate is running at") {
			resp, err := client.Get("http://" + s.addrs["gateway"] + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("make run ended before it was ready: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("make run was not ready within 60 s")
}

// signal sends sig to the whole process group, as Ctrl-C in a terminal, a supervisor or
// `kill -- -PGID` do.
func (s *runStack) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-s.cmd.Process.Pid, sig); err != nil {
		t.Fatalf("kill -%d -- -%d: %v", sig, s.cmd.Process.Pid, err)
	}
}

// leftovers lists the processes that carry the marker in their environment: everything the
// run started, at any depth (the output prefixers included), except zombies, whose
// environment is gone.
func (s *runStack) leftovers(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(env, []byte(s.marker+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// assertStopped waits for the run to end, then finds no process of it left and every port
// it used free.
func (s *runStack) assertStopped(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(40 * time.Second):
		t.Fatal("make run did not end within 40 s of the signal")
	}
	// make may end before run.sh has stopped the binaries (it dies of the signal at once);
	// the processes then have the script's own deadline (STOP_TIMEOUT=20) to go.
	deadline := time.Now().Add(25 * time.Second)
	var left []int
	for {
		left = s.leftovers(t)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range left {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		t.Errorf("process %d (%s) is still running", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	for name, addr := range s.addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s's port %s is still taken: %v", name, addr, err)
			continue
		}
		ln.Close()
	}
}

// busy keeps every core busy until the test ends: the signals must be handled the same
// when the machine is loaded.
func busy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for ctx.Err() == nil {
				for i := 0; i < 1e6; i++ {
					_ = i * i
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestRunStopsEverything: `make run` leaves no process behind and every port free when it
// is stopped by Ctrl-C, by SIGTERM, by two SIGTERMs in a row (what GNU make does when its
// group gets one: it passes it on), through make itself, while starting, and on a busy
// machine.
func TestRunStopsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack several times")
	}
	dir := runTree(t)
	makePath, makeErr := exec.LookPath("make")
	cases := []struct {
		name                 string
		viaMake, early, load bool
		sigs                 []syscall.Signal
	}{
		{name: "Ctrl-C", sigs: []syscall.Signal{syscall.SIGINT}},
		{name: "SIGTERM", sigs: []syscall.Signal{syscall.SIGTERM}},
		{name: "double SIGTERM", sigs: []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}},
		{name: "make run, SIGTERM to its group", viaMake: true, sigs: []syscall.Signal{syscall.SIGTERM}},
		{name: "make run, Ctrl-C twice", viaMake: true, sigs: []syscall.Signal{syscall.SIGINT, syscall.SIGINT}},
		{name: "SIGTERM while starting", early: true, sigs: []syscall.Signal{syscall.SIGTERM}},
		{name: "busy machine, make run, double SIGTERM", viaMake: true, load: true, sigs: []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			argv := []string{filepath.Join(dir, "scripts/run.sh")}
			if c.viaMake {
				if makeErr != nil {
					t.Skipf("make is not installed: %v", makeErr)
				}
				argv = []string{makePath, "--no-print-directory", "-f", filepath.Join(dir, "Makefile"), "run"}
			}
			if c.load {
				busy(t)
			}
			s := startRun(t, dir, argv...)
			if c.early {
				// The services are up, the gateway not yet: the signal lands in the
				// script's start-up loops.
				testenv.WaitFor(t, "ocean", "http://"+s.addrs["ocean"]+"/healthz", nil, 30*time.Second,
					func(status int, _ []byte) bool { return status > 0 })
			} else {
				s.waitReady(t)
			}
			for i, sig := range c.sigs {
				if i > 0 {
					time.Sleep(20 * time.Millisecond)
				}
				s.signal(t, sig)
			}
			s.assertStopped(t)
		})
	}
}
