package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
// failed, the log's last 6000 bytes are written to the test's output.
func Start(tb testing.TB, path string, env ...string) string {
	tb.Helper()
	logPath := filepath.Join(tb.TempDir(), filepath.Base(path)+".log")
	f, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = f.Close()
		if tb.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			tb.Logf("--- %s log ---\n%s", filepath.Base(path), b)
		}
	})
	return logPath
}
