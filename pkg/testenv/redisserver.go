package testenv

import (
	"context"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server of the test's own, on a port of its own, that the test may
// kill and restart on the same port to cause a real outage; the shared server of
// TEST_REDIS_URL must stay up for the other tests.
type RedisServer struct {
	*Process
	// Addr is the server's host:port.
	Addr string
}

// StartRedis starts a redis-server without persistence and waits until it answers PING.
// It is killed when the test ends.
func StartRedis(tb testing.TB) *RedisServer {
	tb.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("testenv: redis-server not found (%v); install it: apt-get install -y redis-server", err)
	}
	addr := FreeAddr(tb)
	_, port, _ := net.SplitHostPort(addr)
	r := &RedisServer{Addr: addr}
	r.Process = StartProcess(tb, Command{Name: "redis", Path: path,
		Args: []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tb.TempDir()}})
	r.WaitUp(tb)
	return r
}

// URL is the server's redis:// URL (database 0).
func (r *RedisServer) URL() string { return "redis://" + r.Addr + "/0" }

// WaitUp waits until the server answers PING (10 s at most), after a start or a restart.
func (r *RedisServer) WaitUp(tb testing.TB) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	r.WaitUntil(tb, "redis-server on "+r.Addr, 10*time.Second, func(ctx context.Context) error {
		return c.Ping(ctx).Err()
	})
}
