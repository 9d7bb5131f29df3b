package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sensorgate/sensorgate/pkg/obs"
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
	// A short FlushInterval: the batches are also held and gathered across pages.
	hd := NewHandler(Options{Hub: h, Cap: NewCap(nil, 100), FlushInterval: 5 * time.Millisecond})
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

// TestStreamDelayRecorded: the delay histogram (HubOptions.Delay) records every live
// event once when the hub receives it and once per stream that writes it, each delay
// measured from the event's log position, and never a replayed event (Last-Event-ID
// replays old readings, which are not news). The log's positions here are 2 s in the past.
func TestStreamDelayRecorded(t *testing.T) {
	gin.SetMode(gin.TestMode)
	met, err := obs.NewMetrics(prometheus.NewRegistry(), "gateway")
	if err != nil {
		t.Fatal(err)
	}
	src := newLogSource()
	src.base = uint64(time.Now().Add(-2 * time.Second).UnixMilli())
	h := NewHub(HubOptions{Sources: map[string]Source{"ocean": src}, Wait: 200 * time.Millisecond, Delay: met.StreamDelay})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	<-h.Ready("ocean")
	r := gin.New()
	// The gateway's error renderer, as its server installs it (api.fail records the error).
	r.Use(func(c *gin.Context) {
		c.Next()
		if len(c.Errors) > 0 {
			apierr.Write(c.Writer, c.Errors.Last().Err)
		}
	})
	r.GET("/stream", NewHandler(Options{Hub: h, Cap: NewCap(nil, 10)}).AreaStream)
	srv := httptest.NewServer(r)
	defer srv.Close()
	defer h.Close()
	sensor := func(int) string { return "s" }

	type result struct {
		lastID string
		err    error
	}
	// read opens a stream and reads n readings; opened is closed when the stream is open.
	read := func(lastID string, n int, opened chan<- struct{}) <-chan result {
		out := make(chan result, 1)
		go func() {
			ids, stop, err := eventIDs(srv.URL+"/stream", lastID)
			if err != nil {
				close(opened)
				out <- result{err: err}
				return
			}
			defer stop()
			for id := range ids {
				if id == streamOpened {
					close(opened)
				} else if n--; n == 0 {
					out <- result{lastID: id}
					return
				}
			}
			out <- result{err: fmt.Errorf("stream ended with %d readings to go", n)}
		}()
		return out
	}
	wait := func(c <-chan result) string {
		t.Helper()
		select {
		case r := <-c:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.lastID
		case <-time.After(20 * time.Second):
			t.Fatal("stream did not receive its readings within 20 s")
		}
		return ""
	}
	open := func() chan struct{} { return make(chan struct{}) }

	count := func(stage string) (uint64, float64, uint64) {
		t.Helper()
		var m dto.Metric
		if err := met.StreamDelay.WithLabelValues("ocean", stage).(prometheus.Histogram).Write(&m); err != nil {
			t.Fatal(err)
		}
		under := uint64(0) // observations under 1.5 s
		for _, bk := range m.GetHistogram().GetBucket() {
			if bk.GetUpperBound() == 1.5 {
				under = bk.GetCumulativeCount()
			}
		}
		return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum(), under
	}
	// Three streams read 50 live readings; c leaves. a and b read 15 more live: 10
	// while c is away, 5 after it resumed. c gets the 10 by replay, the 5 live.
	oa, ob, oc := open(), open(), open()
	a, b, c := read("", 65, oa), read("", 65, ob), read("", 50, oc)
	<-oa
	<-ob
	<-oc
	src.add(50, sensor)
	cLast := wait(c)
	// c's server side ends when it sees the connection closed (until then it may still
	// write the next readings to it, and record them).
	f := h.followers["ocean"]
	for subs := 3; subs != 2; {
		time.Sleep(5 * time.Millisecond)
		f.mu.Lock()
		subs = len(f.subs)
		f.mu.Unlock()
	}
	src.add(10, sensor)
	// c resumes once the hub has the 10 (else they reach c live, not replayed).
	for n, _, _ := count(obs.StreamReceived); n < 60; n, _, _ = count(obs.StreamReceived) {
		time.Sleep(5 * time.Millisecond)
	}
	oc = open()
	c = read(cLast, 15, oc)
	<-oc
	src.add(5, sensor)
	wait(a)
	wait(b)
	wait(c)

	// The written observations are recorded after the write returns, which may be after
	// the client read the frame: wait for the last ones.
	deadline := time.Now().Add(5 * time.Second)
	for n, _, _ := count(obs.StreamWritten); n < 50*3+10*2+5*3 && time.Now().Before(deadline); n, _, _ = count(obs.StreamWritten) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []struct {
		stage string
		n     uint64
	}{{obs.StreamReceived, 65}, {obs.StreamWritten, 50*3 + 10*2 + 5*3}} {
		n, sum, under := count(want.stage)
		if n != want.n {
			t.Errorf("%s: %d delays recorded, want %d", want.stage, n, want.n)
		}
		if under != 0 || sum/float64(n) > 30 {
			t.Errorf("%s: %d delays under 1.5 s, mean %.2f s; every event was logged 2 s before it was added", want.stage, under, sum/float64(n))
		}
	}
}

// TestStreamWritesCoalesced: a reading after a quiet spell is written at once; the
// readings arriving within FlushInterval after a write, page by page as the services'
// logs hand them out, are gathered and written together, in order, each with its own id.
// Writes are counted on the connection.
func TestStreamWritesCoalesced(t *testing.T) {
	gin.SetMode(gin.TestMode)
	src := newLogSource()
	h := NewHub(HubOptions{Sources: map[string]Source{"ocean": src}, Wait: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	<-h.Ready("ocean")
	r := gin.New()
	r.GET("/stream", NewHandler(Options{Hub: h, FlushInterval: 2 * time.Second}).AreaStream)
	srv := httptest.NewUnstartedServer(r)
	var writes atomic.Int64
	srv.Listener = countingListener{srv.Listener, &writes}
	srv.Start()
	defer srv.Close()
	defer h.Close()

	frames, stop, err := eventIDs(srv.URL+"/stream", "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	next := func() string {
		t.Helper()
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatal("stream ended")
			}
			return f
		case <-time.After(10 * time.Second):
			t.Fatal("no frame within 10 s")
		}
		return ""
	}
	if f := next(); f != streamOpened {
		t.Fatalf("first frame %q", f)
	}
	sensor := func(int) string { return "s" }
	src.add(1, sensor)
	next()
	before := writes.Load()
	// Ten pages 20 ms apart: well within the 2 s after the first write.
	for i := 0; i < 10; i++ {
		time.Sleep(20 * time.Millisecond)
		src.add(3, sensor)
	}
	for i := 2; i <= 31; i++ {
		cur, err := ParseCursor(next())
		if err != nil {
			t.Fatal(err)
		}
		if cur["ocean"].MS != uint64(i) {
			t.Fatalf("frame %d carries position %v", i, cur["ocean"])
		}
	}
	// One send is a chunk: its size line, data and end may be up to three writes on the
	// connection; ten pages sent one by one would be ten sends.
	if n := writes.Load() - before; n > 3 {
		t.Errorf("the 30 readings of ten pages took %d writes on the connection, want one send (at most 3 writes)", n)
	}
}

// streamOpened is what eventIDs sends when the stream's opening comment arrived.
const streamOpened = "(open)"

// eventIDs opens a stream (resuming from lastID when given) and sends streamOpened once it
// is open, then the id of every event, until the stream ends or stop is called.
func eventIDs(url, lastID string) (ids <-chan string, stop func(), err error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("open: %w", err)
	}
	out, done := make(chan string), make(chan struct{})
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		id := ""
		for sc.Scan() {
			send := ""
			switch line := sc.Text(); {
			case strings.HasPrefix(line, ": sensorgate stream open"):
				send = streamOpened
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case line == "" && id != "":
				send, id = id, ""
			}
			if send == "" {
				continue
			}
			select {
			case out <- send:
			case <-done:
				return
			}
		}
	}()
	return out, func() { close(done); resp.Body.Close() }, nil
}

// countingListener counts the writes on the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// The area stream delivers every measurement with its qc: a qc filter, which area
// latest's parser reads, is refused there rather than ignored.
func TestAreaStreamRefusesQC(t *testing.T) {
	gin.SetMode(gin.TestMode)
	h := NewHub(HubOptions{Sources: map[string]Source{"ocean": newLogSource()}, Buffer: 16, Wait: 50 * time.Millisecond})
	defer h.Close()
	r := gin.New()
	// The gateway's error renderer, as its server installs it (api.fail records the error).
	r.Use(func(c *gin.Context) {
		c.Next()
		if len(c.Errors) > 0 {
			apierr.Write(c.Writer, c.Errors.Last().Err)
		}
	})
	r.GET("/stream", NewHandler(Options{Hub: h, Cap: NewCap(nil, 10)}).AreaStream)
	srv := httptest.NewServer(r)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/stream?qc=good")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `\"qc\"`) {
		t.Fatalf("qc=good on the stream: %d %s, want 400 naming qc", resp.StatusCode, b)
	}
}
