package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestFallbackSurvivesRedisRestart stops a real redis-server under the limiter and starts
// it again on the same port.
func TestFallbackSurvivesRedisRestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		failClosed bool
	}{
		{"fail-open counts locally", false},
		{"fail-closed refuses", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startRedisServer(t)
			reg := prometheus.NewRegistry()
			f, err := NewFallback(
				NewBatcher(NewRedis(srv.client(t), "t:", 200*time.Millisecond), 0, 0),
				NewMemory(nil),
				FallbackOptions{FailClosed: tt.failClosed, RetryEvery: 20 * time.Millisecond, Registerer: reg},
			)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			l := PerHour(100)

			res, err := f.Allow(ctx, "k", l)
			if err != nil || !res.Allowed || res.Remaining != 99 {
				t.Fatalf("with Redis up: %+v, %v; want allowed with 99 remaining", res, err)
			}
			if st := f.Status(); st.Degraded {
				t.Fatalf("status with Redis up = %+v, want not degraded", st)
			}

			srv.stop()
			res, err = f.Allow(ctx, "k", l)
			if tt.failClosed {
				if !errors.Is(err, ErrUnavailable) {
					t.Fatalf("fail-closed with Redis down: %+v, %v; want ErrUnavailable", res, err)
				}
			} else if err != nil || !res.Allowed {
				t.Fatalf("fail-open with Redis down: %+v, %v; want allowed by the local limiter", res, err)
			}
			st := f.Status()
			if !st.Degraded || st.LastError == "" || st.Since.IsZero() || st.Backend != "redis" {
				t.Fatalf("status with Redis down = %+v, want degraded with the error", st)
			}
			if g := testutil.ToFloat64(f.degradedGauge); g != 1 {
				t.Errorf("degraded gauge = %v, want 1", g)
			}
			// Requests keep being answered while Redis stays down.
			for range 20 {
				_, err := f.Allow(ctx, "k", l)
				if tt.failClosed != (err != nil) {
					t.Fatalf("while down: err = %v", err)
				}
			}

			srv.start()
			waitFor(t, func() bool {
				_, _ = f.Allow(ctx, "k", l)
				return !f.Status().Degraded
			})
			if g := testutil.ToFloat64(f.degradedGauge); g != 0 {
				t.Errorf("degraded gauge after recovery = %v, want 0", g)
			}
			res, err = f.Allow(ctx, "k", l)
			if err != nil || !res.Allowed {
				t.Fatalf("after recovery: %+v, %v", res, err)
			}
			// The new Redis is empty, so its count started again; what matters is that the
			// answer comes from Redis: its remaining count is below the full budget.
			if res.Remaining >= 99 {
				t.Errorf("after recovery remaining = %d, want a Redis count below 99", res.Remaining)
			}
			if n := testutil.ToFloat64(f.decisions.WithLabelValues("allowed", "primary")); n < 2 {
				t.Errorf("primary decisions = %v, want >= 2", n)
			}
		})
	}
}

func TestFallbackDoesNotDegradeOnCallerCancel(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	f, err := NewFallback(NewRedis(srv.client(t), "t:", time.Second), NewMemory(nil), FallbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Allow(ctx, "k", PerHour(10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: err = %v, want context.Canceled", err)
	}
	if f.Status().Degraded {
		t.Fatal("a cancelled caller marked Redis down")
	}
}

func TestFallbackMetricsRegisterOnce(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := NewFallback(NewMemory(nil), NewMemory(nil), FallbackOptions{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFallback(NewMemory(nil), NewMemory(nil), FallbackOptions{Registerer: reg}); err == nil {
		t.Fatal("second registration on one registry succeeded; want a clear error")
	}
}
