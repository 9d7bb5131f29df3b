package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// Cluster is a throwaway PostgreSQL server of one test, in its own temporary directory and
// port, that the test may stop and start to cause a real outage. It never touches the
// machine's shared server.
type Cluster struct {
	bin, dir string
	port     int
	// asPostgres runs the server's tools as the postgres user (initdb refuses root).
	asPostgres bool
	// URL is the connection string of the cluster's postgres database.
	URL string
}

// NewCluster initialises and starts a cluster (initdb, pg_ctl) and stops it when the test
// ends. It skips the test when the PostgreSQL server binaries are not installed.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Strings(bins)
	bin := ""
	if len(bins) > 0 {
		bin = filepath.Dir(bins[len(bins)-1])
	} else if p, err := exec.LookPath("initdb"); err == nil {
		bin = filepath.Dir(p)
	}
	if bin == "" {
		tb.Skip("testenv: PostgreSQL server binaries (initdb, pg_ctl) are not installed")
	}
	dir, err := os.MkdirTemp("", "sgcluster-")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{bin: bin, dir: dir, asPostgres: os.Geteuid() == 0}
	tb.Cleanup(func() {
		_ = c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "stop")
		_ = os.RemoveAll(dir)
	})
	if c.asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Skipf("testenv: running as root and there is no postgres user to run initdb as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	if err := c.run("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		tb.Fatalf("testenv: initdb: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	c.Start(tb)
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=30", c.port, c.dir)
	if err := c.run("pg_ctl", "-D", c.data(), "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		tb.Fatalf("testenv: pg_ctl start: %v\n%s", err, log)
	}
}

// Stop stops the server at once (fast shutdown: connections are cut).
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	if err := c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop"); err != nil {
		tb.Fatalf("testenv: pg_ctl stop: %v", err)
	}
}

func (c *Cluster) run(tool string, args ...string) error {
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.asPostgres {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", tool, err, out)
	}
	return nil
}
