package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// BenchmarkAllow compares one key's decisions under parallel load: redis_rate per request,
// the same behind a Batcher, and the in-process limiter. Run with
//
//	make bench (or: scripts/testenv.sh go test -run '^$' -bench Allow -benchtime 2s ./gateway/ratelimit/)
func BenchmarkAllow(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	big := Limit{Rate: 1 << 30, Period: time.Hour, Burst: 1 << 30}
	cases := []struct {
		name string
		l    Limiter
	}{
		{"redis", NewRedis(rdb, prefix+"a:", time.Second)},
		{"redis+batcher", NewBatcher(NewRedis(rdb, prefix+"b:", time.Second), 0, 0)},
		{"memory", NewMemory(nil)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(25) // 50 goroutines on 2 cores, like wrk -c50
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := c.l.Allow(ctx, "bench", big); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
