package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// BenchmarkBurst1000: a burst of 330 readings (a simulated ingest round, docs/live.md
// "Figures") to 1,000 open area streams over real HTTP connections; one op is one burst,
// from its logging until every stream holds all 330 events. Clients run in the same
// process, so the figures are those of the whole machine for 330,000 deliveries: the
// time of a burst and the CPU it took (cpu_ms/burst).
//
// at-once logs the 330 readings at once; trickle logs them as the services do, a few at a
// time (5 every 20 ms, over 1.3 s), each page fanned out as it comes. Each runs with
// writes at least FlushInterval apart (flush-100ms, flush-250ms) and without (flush-none,
// the default).
//
//	go test -run '^$' -bench Burst1000 -benchtime 10x ./stream/   (in gateway/)
func BenchmarkBurst1000(b *testing.B) {
	for _, arrival := range []struct {
		name string
		page int
		gap  time.Duration
	}{{"at-once", 330, 0}, {"trickle", 5, 20 * time.Millisecond}} {
		for _, flush := range []struct {
			name     string
			interval time.Duration
		}{{"flush-none", 0}, {"flush-100ms", 100 * time.Millisecond}, {"flush-250ms", 250 * time.Millisecond}} {
			b.Run(arrival.name+"/"+flush.name, func(b *testing.B) { benchBurst(b, arrival.page, arrival.gap, flush.interval) })
		}
	}
}

func benchBurst(b *testing.B, page int, gap, flush time.Duration) {
	const streams, burst = 1000, 330
	gin.SetMode(gin.TestMode)
	src := newLogSource()
	h := NewHub(HubOptions{Sources: map[string]Source{"ocean": src}, Wait: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	<-h.Ready("ocean")
	hd := NewHandler(Options{Hub: h, Cap: NewCap(nil, 2*streams), FlushInterval: flush})
	r := gin.New()
	r.GET("/stream", hd.AreaStream)
	srv := httptest.NewServer(r)
	defer srv.Close()
	defer h.Close()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableCompression: true}}

	var got sync.WaitGroup // one count per stream per burst
	opened := make(chan struct{}, streams)
	for i := 0; i < streams; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stream", nil)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("open stream %d: %v", i, err)
		}
		go func() {
			defer resp.Body.Close()
			br := bufio.NewReaderSize(resp.Body, 64<<10)
			n := 0
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				switch {
				case bytes.HasPrefix(line, []byte(": sensorgate stream open")):
					opened <- struct{}{}
				case bytes.Equal(line, []byte("event: reading\n")):
					if n++; n == burst {
						n = 0
						got.Done()
					}
				}
			}
		}()
	}
	for i := 0; i < streams; i++ {
		<-opened
	}
	cpu0 := testenv.CPUTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got.Add(streams)
		for n := 0; n < burst; n += page {
			if n > 0 {
				time.Sleep(gap)
			}
			addReadings(src, min(page, burst-n))
		}
		got.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/burst")
	b.ReportMetric(float64((testenv.CPUTime(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu_ms/burst")
}

// addReadings logs n readings of the size of a real one (~500 bytes of data).
func addReadings(l *logSource, n int) {
	l.mu.Lock()
	for i := 0; i < n; i++ {
		k := len(l.events) + 1
		l.events = append(l.events, contract.Event{Pos: fmt.Sprintf("%d-0", k), SensorID: fmt.Sprintf("s%d", k%300), ExternalID: "41002",
			Reading: json.RawMessage(fmt.Sprintf(`{"id":"7f1c1c6e-8d1a-5f43-9a57-%012d","timestamp":"2026-11-25T16:10:00.000Z",`+
				`"measurements":[{"parameter":"air_temperature","value":12.5,"unit":"degC","value_original":12.5,"unit_original":"degC"},`+
				`{"parameter":"wind_speed","value":4.1,"unit":"m/s","value_original":8,"unit_original":"kn"},`+
				`{"parameter":"sea_level_pressure","value":1013.2,"unit":"hPa","value_original":1013.2,"unit_original":"hPa"}],`+
				`"location":{"latitude":38.0,"longitude":-74.1}}`, k))})
	}
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
}
