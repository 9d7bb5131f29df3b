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
	bl := b.build(name)
	if bl.err != nil {
		tb.Fatal(bl.err)
	}
	return bl.path
}

// BuildAll builds every binary now (those of Race only when the tests run under -race),
// for TestMain to call before m.Run: a build there does not count against the tests'
// -timeout, which a slow build on a loaded machine would otherwise use up. A failed build
// fails the tests that ask for that binary.
func (b *Binaries) BuildAll() {
	for name := range b.Pkgs {
		if !slices.Contains(b.Race, name) || raceEnabled {
			b.build(name)
		}
	}
}

func (b *Binaries) build(name string) *build {
	b.mu.Lock()
	if b.built == nil {
		b.built = map[string]*build{}
	}
	bl := b.built[name]
	if bl == nil {
		bl = &build{}
		b.built[name] = bl
	}
	b.mu.Unlock()
	bl.once.Do(func() {
		pkg, ok := b.Pkgs[name]
		if !ok {
			bl.err = fmt.Errorf("testenv: no package for the binary %q", name)
			return
		}
		dir, err := b.tempDir()
		if err != nil {
			bl.err = err
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
	return bl
}

func (b *Binaries) tempDir() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "sensorgate-bin-")
		if err != nil {
			return "", err
		}
		b.dir = dir
	}
	return b.dir, nil
}

// Remove deletes the binaries built.
func (b *Binaries) Remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// Main is the whole TestMain of a package that runs binaries: it builds them all before
// the first test (so no test's time includes a build), runs the tests, removes the
// binaries and exits with the tests' code.
func (b *Binaries) Main(m *testing.M) {
	b.BuildAll()
	code := m.Run()
	b.Remove()
	os.Exit(code)
}
