package ratelimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// redisServer is a redis-server process of the test's own, which the test may stop and
// start again on the same port to cause a real outage.
type redisServer struct {
	*testenv.RedisServer
	tb testing.TB
}

func startRedisServer(tb testing.TB) *redisServer {
	tb.Helper()
	return &redisServer{RedisServer: testenv.StartRedis(tb), tb: tb}
}

func (s *redisServer) addr() string { return s.Addr }

// start starts the stopped server again on its port and waits until it answers.
func (s *redisServer) start() {
	s.tb.Helper()
	s.Restart(s.tb)
	s.WaitUp(s.tb)
}

// stop kills the server (SIGKILL) and returns once it is gone.
func (s *redisServer) stop() { s.Kill() }

func (s *redisServer) client(tb testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr(), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *redisServer) String() string { return fmt.Sprintf("redis-server %s", s.addr()) }

func newClient(tb testing.TB, addr string, db int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
