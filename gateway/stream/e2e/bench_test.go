package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// quantile of sorted durations.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// BenchmarkAreaLatest1000: area latest of 1,000 sensors spread over three services (real
// services on PostgreSQL, one gateway); reports p50 and p99 of the whole request.
//
//	scripts/testenv.sh go test -run '^$' -bench AreaLatest1000 -benchtime 300x ./gateway/stream/e2e/
func BenchmarkAreaLatest1000(b *testing.B) {
	st := startStack(b, stackOptions{services: []string{"ocean", "weather", "airquality"}, simStations: 170})
	g := st.startGateway(b, "gateway", 1000)
	url := g.url + "/api/v1/readings/latest?limit=1000"
	services := map[string]bool{}
	var a latestAnswer
	if r := get(b, url); r.status != 200 || json.Unmarshal(r.body, &a) != nil || len(a.Items) != 1000 {
		b.Fatalf("warm-up: %d, %d items", r.status, len(a.Items))
	}
	for _, it := range a.Items {
		services[it.ServiceID] = true
	}
	if len(services) != 3 {
		b.Fatalf("the 1000 sensors come from %d services, want 3", len(services))
	}
	lat := make([]time.Duration, 0, b.N)
	type slow struct{ at, took time.Duration }
	var all []slow // when each request started, to tell a tail from a background job's
	t0 := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if r := get(b, url); r.status != 200 {
			b.Fatalf("status %d", r.status)
		}
		lat = append(lat, time.Since(start))
		all = append(all, slow{start.Sub(t0), lat[len(lat)-1]})
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(quantile(lat, 0.5).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(quantile(lat, 0.9).Microseconds())/1000, "p90_ms")
	b.ReportMetric(float64(quantile(lat, 0.99).Microseconds())/1000, "p99_ms")
	if b.N < 100 {
		return // the benchmark's probing run
	}
	slices.SortFunc(all, func(x, y slow) int { return int(y.took - x.took) })
	for _, s := range all[:8] {
		b.Logf("slow: %v at +%v", s.took.Round(time.Millisecond), s.at.Round(time.Millisecond))
	}
}

// BenchmarkStreamDelivery1000: 1,000 open area streams on one gateway while the services
// store readings at their simulated cadence (event logs in Redis); the delay of each
// delivered reading is its arrival at the client minus the time its service logged it
// (the log position's milliseconds, right after the batch committed). It also reports the
// gateway's own view of two hops (received from the log, written to the client: its
// sensorgate_stream_delay_seconds, to bucket bounds) and the CPU a delivery of the gateway
// and of the clients. Start it about a minute before a 10-minute mark to catch a burst
// (docs/live.md); STREAM_FLUSH_INTERVAL in its environment reaches the gateway.
//
//	scripts/testenv.sh go test -run '^$' -bench StreamDelivery1000 -benchtime 1x ./gateway/stream/e2e/
func BenchmarkStreamDelivery1000(b *testing.B) {
	const streams = 1000
	st := startStack(b, stackOptions{services: []string{"ocean", "weather"}, simStations: 300, redis: true})
	g := st.startGateway(b, "gateway", 300, "STREAM_MAX_PER_KEY=1000")
	for i := 0; i < b.N; i++ {
		var (
			mu     sync.Mutex
			delays []time.Duration
			wg     sync.WaitGroup
		)
		// Longer than a minute: the simulation times readings on whole minutes, and a
		// shorter window can hold none (it did, once in five runs, at 45 s).
		const window = 75 * time.Second
		// The clients read lean (delays/delivery below): they share the two cores with
		// the gateway, the services and the stores, and a client that costs three times
		// what the gateway does per reading (the harness's frame-by-frame reader did)
		// measures mostly itself.
		ctx, cancel := context.WithTimeout(context.Background(), window)
		defer cancel()
		bodies := make([]io.ReadCloser, 0, streams)
		for j := 0; j < streams; j++ {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/api/v1/readings/stream", nil)
			req.Header.Set("x-api-key", apiKey)
			resp, err := streamClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("stream %d: %v %v", j, err, resp)
			}
			bodies = append(bodies, resp.Body)
		}
		// From here on (the streams are open): the deliveries' CPU, not the opening's.
		before, gwCPU0 := scrapeGateway(b, g.url)
		cpu0 := testenv.CPUTime(b)
		for _, body := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer body.Close()
				local := delaysOf(body)
				mu.Lock()
				delays = append(delays, local...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		slices.Sort(delays)
		if len(delays) == 0 {
			b.Fatalf("no reading delivered in %v", window)
		}
		b.ReportMetric(float64(len(delays)), "deliveries")
		b.ReportMetric(float64(quantile(delays, 0.5).Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(quantile(delays, 0.99).Microseconds())/1000, "p99_ms")
		b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "max_ms")
		// The hops inside the gateway, from its StreamDelay histogram (bucket bounds):
		// the log to the gateway's follower, the log to the stream's write; what is
		// left of the client's delay is the socket and this process's reading.
		after, gwCPU := scrapeGateway(b, g.url)
		b.ReportMetric((gwCPU-gwCPU0)*1e6/float64(len(delays)), "gateway_cpu_us/delivery")
		b.ReportMetric(float64((testenv.CPUTime(b)-cpu0).Microseconds())/float64(len(delays)), "client_cpu_us/delivery")
		for _, stage := range []string{obs.StreamReceived, obs.StreamWritten} {
			h := after[stage].minus(before[stage])
			b.Logf("gateway %s: %d events, p50 <= %gs, p99 <= %gs, max <= %gs", stage, h.count, h.quantile(0.5), h.quantile(0.99), h.quantile(1))
			b.ReportMetric(h.quantile(0.99)*1000, stage+"_p99_ms")
		}
	}
}

// delayHist is the gateway's StreamDelay histogram of one stage, summed over services.
type delayHist struct {
	count  uint64
	bounds []float64
	cum    []uint64 // cumulative counts at bounds
}

// scrapeGateway reads the gateway's StreamDelay histograms by stage, and its CPU seconds.
func scrapeGateway(t testing.TB, gw string) (map[string]delayHist, float64) {
	t.Helper()
	r := get(t, gw+obs.PathMetrics)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if r.status != 200 || err != nil {
		t.Fatalf("gateway metrics: %d, %v", r.status, err)
	}
	out := map[string]delayHist{}
	for _, m := range fams["sensorgate_stream_delay_seconds"].GetMetric() {
		stage := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "stage" {
				stage = l.GetValue()
			}
		}
		h := out[stage]
		h.count += m.GetHistogram().GetSampleCount()
		for i, bk := range m.GetHistogram().GetBucket() {
			if len(h.bounds) <= i {
				h.bounds = append(h.bounds, bk.GetUpperBound())
				h.cum = append(h.cum, 0)
			}
			h.cum[i] += bk.GetCumulativeCount()
		}
		out[stage] = h
	}
	return out, fams["process_cpu_seconds_total"].GetMetric()[0].GetCounter().GetValue()
}

// minus is h's observations since prev.
func (h delayHist) minus(prev delayHist) delayHist {
	out := delayHist{count: h.count - prev.count, bounds: h.bounds, cum: slices.Clone(h.cum)}
	for i := range prev.cum {
		out.cum[i] -= prev.cum[i]
	}
	return out
}

// quantile is the upper bound of the bucket holding the q quantile (+Inf beyond the last).
func (h delayHist) quantile(q float64) float64 {
	need := uint64(math.Ceil(q * float64(h.count)))
	for i, c := range h.cum {
		if c >= need {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

// delaysOf reads a stream until it ends and returns the delay of each reading: its
// arrival minus its service's log position. It keeps no frame and copies no line.
func delaysOf(r io.Reader) []time.Duration {
	var (
		out     []time.Duration
		id      []byte
		service string
	)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return out
		}
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			id = append(id[:0], line[4:len(line)-1]...)
		case bytes.HasPrefix(line, []byte("data: ")):
			service = ""
			if _, rest, ok := bytes.Cut(line, []byte(`"service_id":"`)); ok {
				if v, _, ok := bytes.Cut(rest, []byte(`"`)); ok {
					service = string(v)
				}
			}
		case len(line) == 1 && len(id) > 0:
			at := time.Now()
			if c, err := stream.ParseCursor(string(id)); err == nil {
				if p, ok := c[service]; ok {
					out = append(out, at.Sub(time.UnixMilli(int64(p.MS))))
				}
			}
			id = id[:0]
		}
	}
}
