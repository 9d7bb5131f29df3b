package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// TestStreamsBatchedNeverMix: 24 area streams over real HTTP connections read two
// services' logs while bursts of readings arrive; half of them leave mid-way and resume
// with Last-Event-ID. The streams share the hub's rendered frames and each sends what is
// queued for it in batches (docs/live.md "Figures"), so every frame is checked against its
// own id: its data is the reading at the position the id holds for its service, every
// reading arrives once and in order per service, none is missing. Run with -race: a frame
// or a writer buffer shared wrongly between streams shows up as a mismatch or a race.
func TestStreamsBatchedNeverMix(t *testing.T) {
	gin.SetMode(gin.TestMode)
	srcs := map[string]*logSource{"ocean": newLogSource(), "weather": newLogSource()}
	h := NewHub(HubOptions{Sources: map[string]Source{"ocean": srcs["ocean"], "weather": srcs["weather"]},
		Buffer: 1 << 14, Wait: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	<-h.Ready("ocean")
	<-h.Ready("weather")
	hd := NewHandler(Options{Hub: h, MaxPerKey: 100})
	r := gin.New()
	r.GET("/stream", hd.AreaStream)
	srv := httptest.NewServer(r)
	defer srv.Close()
	defer h.Close()

	const streams, bursts, perBurst = 24, 20, 150
	total := bursts * perBurst // per service
	sensor := func(i int) string { return fmt.Sprintf("s%d", i%7) }
	var (
		wg   sync.WaitGroup
		open sync.WaitGroup
	)
	errs := make(chan error, streams)
	open.Add(streams)
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &streamChecker{next: map[string]uint64{}, want: 2 * total}
			leaveAt := 0
			if i%2 == 1 {
				leaveAt = total / 3 * (1 + i%3) / 2
			}
			first := true
			lastID := ""
			for c.seen < c.want {
				err := c.read(srv.URL+"/stream", lastID, leaveAt, func() {
					if first {
						first = false
						open.Done()
					}
				})
				if err != nil {
					errs <- fmt.Errorf("stream %d: %w", i, err)
					if first {
						open.Done()
					}
					return
				}
				lastID, leaveAt = c.lastID, 0
			}
		}()
	}
	open.Wait()
	for b := 0; b < bursts; b++ {
		srcs["ocean"].add(perBurst, sensor)
		srcs["weather"].add(perBurst, sensor)
		time.Sleep(20 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("streams did not receive every reading within 60 s")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// streamChecker follows one client's view across its connections.
type streamChecker struct {
	next   map[string]uint64 // per service, the last position received
	want   int               // readings in all
	seen   int
	lastID string
}

// read opens a stream (resuming from lastID when given) and checks every frame until
// every reading arrived, or, when leaveAt > 0, until that many were seen (the client
// leaves). opened is called once the stream's first bytes arrived.
func (c *streamChecker) read(url, lastID string, leaveAt int, opened func()) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("open: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var id, data, event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ": sensorgate stream open"):
			opened()
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "retry: "):
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "":
			if event == "" {
				continue
			}
			if err := c.check(event, id, data); err != nil {
				return err
			}
			event, id, data = "", "", ""
			if c.seen >= c.want || (leaveAt > 0 && c.seen >= leaveAt) {
				return nil
			}
		default:
			return fmt.Errorf("unexpected line %q", line)
		}
	}
	return fmt.Errorf("stream ended after %d readings: %v", c.seen, sc.Err())
}

func (c *streamChecker) check(event, id, data string) error {
	var d struct {
		SensorID  string `json:"sensor_id"`
		ServiceID string `json:"service_id"`
		N         uint64 `json:"n"`
	}
	if event != "reading" || json.Unmarshal([]byte(data), &d) != nil {
		return fmt.Errorf("bad frame: event %q, data %q", event, data)
	}
	cur, err := ParseCursor(id)
	if err != nil {
		return fmt.Errorf("bad id %q: %w", id, err)
	}
	if p := cur[d.ServiceID]; p.MS != d.N {
		return fmt.Errorf("frame of %s reading %d carries the cursor %s for it: data and id mixed", d.ServiceID, d.N, p)
	}
	if d.N != c.next[d.ServiceID]+1 || d.SensorID != fmt.Sprintf("s%d", d.N%7) {
		return fmt.Errorf("%s: got reading %d of %s after %d (every reading once, in order)", d.ServiceID, d.N, d.SensorID, c.next[d.ServiceID])
	}
	c.next[d.ServiceID] = d.N
	c.seen++
	c.lastID = id
	return nil
}
