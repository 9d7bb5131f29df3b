package mcp_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// BenchmarkSensorScopeOverhead measures what the sensor-scope endpoint adds to a tool call:
// tools/call of ocean.latest_observation with empty arguments through
// POST /api/v1/sensors/:id/mcp of the real gateway (app.Run: auth, rate limit, access log,
// catalog lookup, _meta injection, forwarding), against the same call made directly to the
// ocean service's POST /mcp, alternating the two in one run over keep-alive connections.
// It reports the p50 and p90 of each and the p50 difference.
//
//	go test ./gateway/mcp -run '^$' -bench BenchmarkSensorScopeOverhead -benchtime 2000x
func BenchmarkSensorScopeOverhead(b *testing.B) {
	env := map[string]string{
		"SENSORGATE_ENV":   "production",
		"RATE_LIMIT_PLANS": "bench=1000000000/h",
		"REDIS_URL":        testenv.RedisURL(), // production refuses to start without it
		"LOG_LEVEL":        "info",
	}
	var benchKey string
	gwURL, svcURL, s0 := realGatewayWith(b, env, func(ctx context.Context, dbURL string) string {
		st, err := store.Open(ctx, store.Config{DatabaseURL: dbURL, SkipMigrations: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		owner, err := st.CreateUser(ctx, catalog.User{ID: auth.OwnerID("bench"), Name: "bench", Email: "bench@example.org"})
		if err != nil {
			b.Fatal(err)
		}
		k, err := auth.Generate(catalog.EnvProduction)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.CreateKey(ctx, catalog.APIKey{Name: "bench", Prefix: k.Prefix, Hash: k.Hash, OwnerID: owner.ID, Environment: catalog.EnvProduction, Plan: "bench"}); err != nil {
			b.Fatal(err)
		}
		benchKey = k.Secret
		return k.Secret
	})
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ocean.latest_observation","arguments":{}}}`)
	direct := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ocean.latest_observation","arguments":{},"_meta":{"sensor_external_id":"` + s0.ExternalID + `"}}}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 10 * time.Second}
	call := func(url string, payload []byte, header ...string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(out), s0.ExternalID) || strings.Contains(string(out), `"isError":true`) {
			b.Fatalf("%s: %d %s", url, resp.StatusCode, out)
		}
		return d
	}
	gw := func() time.Duration {
		return call(gwURL+"/api/v1/sensors/"+s0.ID+"/mcp", body, "x-api-key", benchKey)
	}
	svc := func() time.Duration {
		return call(svcURL+contract.PathMCP, direct, "Accept", "application/json, text/event-stream", contract.HeaderInternalToken, internalToken)
	}
	for range 50 { // warm connections, caches and the key lookup
		gw()
		svc()
	}
	viaGateway := make([]time.Duration, 0, b.N)
	viaService := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			viaGateway = append(viaGateway, gw())
			viaService = append(viaService, svc())
		} else {
			viaService = append(viaService, svc())
			viaGateway = append(viaGateway, gw())
		}
	}
	b.StopTimer()
	pg, ps := percentile(viaGateway, 50), percentile(viaService, 50)
	b.ReportMetric(ms(ps), "direct-p50-ms")
	b.ReportMetric(ms(pg), "gateway-p50-ms")
	b.ReportMetric(ms(pg-ps), "overhead-p50-ms")
	b.ReportMetric(ms(percentile(viaService, 90)), "direct-p90-ms")
	b.ReportMetric(ms(percentile(viaGateway, 90)), "gateway-p90-ms")
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
