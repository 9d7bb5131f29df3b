package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// Binaries are the main packages a test package runs as processes, each built once per
// test process, when a test first asks for it, into one temporary directory. A package
// variable holds them; TestMain calls Remove after m.Run.
type Binaries struct {
	// Pkgs maps a binary's name to its main package's import path.
	Pkgs map[string]string
	// Race names the binaries built with the race detector, so that a data race inside a
	// server process fails the test too.
	Race []string

	mu    sync.Mutex
	dir   string
	built map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Path builds the binary name (once) and returns its path.
func (b *Binaries) Path(tb testing.TB, name string) string {
	tb.Helper()
	b.mu.Lock()
	if b.built == nil {
		b.built = map[string]*build{}
	}
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "sensorgate-bin-")
		if err != nil {
			b.mu.Unlock()
			tb.Fatal(err)
		}
		b.dir = dir
	}
	bl := b.built[name]
	if bl == nil {
		bl = &build{}
		b.built[name] = bl
	}
	dir := b.dir
	b.mu.Unlock()
	bl.once.Do(func() {
		pkg, ok := b.Pkgs[name]
		if !ok {
			bl.err = fmt.Errorf("testenv: no package for the binary %q", name)
			return
		}
		args := []string{"build", "-o", filepath.Join(dir, name)}
		if slices.Contains(b.Race, name) {
			args = append(args, "-race")
		}
		if out, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
			bl.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			return
		}
		bl.path = filepath.Join(dir, name)
	})
	if bl.err != nil {
		tb.Fatal(bl.err)
	}
	return bl.path
}

// Remove deletes the binaries built.
func (b *Binaries) Remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
