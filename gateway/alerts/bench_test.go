package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/stream"
)

// benchRules makes n rules over sensors: a third each on sensor lists, boxes and circles.
func benchRules(n int, sensors []string, r *rand.Rand) []Rule {
	out := make([]Rule, n)
	for i := range out {
		ru := Rule{ID: fmt.Sprint(i), keyID: "k", Condition: Condition{Parameter: "pm2_5_ug_per_m3", Op: OpAbove, Value: ptr(float64(r.IntN(100)))}}
		lat, lon := r.Float64()*140-70, r.Float64()*340-170
		switch i % 3 {
		case 0:
			ru.Target.SensorIDs = []string{sensors[r.IntN(len(sensors))], sensors[r.IntN(len(sensors))]}
		case 1:
			ru.Target.BBox = &BBox{MinLat: lat, MinLon: lon, MaxLat: lat + 5, MaxLon: lon + 5}
		default:
			ru.Target.Near = &Near{Lat: lat, Lon: lon, RadiusKM: 200}
		}
		out[i] = ru
	}
	return out
}

// BenchmarkEvaluatePerReading10kRules: the evaluation cost of one reading against 10,000
// rules (matching and the state machine, in memory; the commit of a reading that raised
// events is the database's and is in the next benchmark).
func BenchmarkEvaluatePerReading10kRules(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	sensors := make([]string, 5000)
	pos := make([][2]float64, len(sensors))
	for i := range sensors {
		sensors[i] = uuid.NewString()
		pos[i] = [2]float64{r.Float64()*140 - 70, r.Float64()*340 - 170}
	}
	rs := newRuleSet(benchRules(10_000, sensors, r))
	states := map[string]map[string]stateRow{}
	var buf []*Rule
	now := time.Now()
	matched := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(sensors)
		lat, lon := pos[k][0], pos[k][1]
		rd := reading{SensorID: sensors[k], At: now.Add(time.Duration(i) * time.Second), Values: map[string]float64{"pm2_5_ug_per_m3": float64(i % 120)}, Lat: &lat, Lon: &lon}
		buf = rs.match(buf[:0], rd, nil)
		matched += len(buf)
		st := states[rd.SensorID]
		if st == nil {
			st = map[string]stateRow{}
			states[rd.SensorID] = st
		}
		evaluate(buf, st, rd, now)
	}
	b.ReportMetric(float64(matched)/float64(b.N), "rules-matched/reading")
}

// BenchmarkCommitToFirstAttempt1kRules: 1,000 rules with webhooks over three simulated
// services' logs on PostgreSQL; each iteration is a burst of one reading per sensor that
// crosses every rule's threshold (1,000 events), and the p95 from each reading's append
// to its service's log (the service's commit) to the first delivery attempt of each event
// it raised is reported as p95-seconds (the target is at most 5 s).
func BenchmarkCommitToFirstAttempt1kRules(b *testing.B) {
	cat := openCatalog(b, true)
	st := openStore(b, cat)
	var mu sync.Mutex
	first := map[string]time.Time{} // webhook-id -> first attempt
	bodies := map[string]Event{}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		mu.Lock()
		if _, ok := first[id]; !ok {
			first[id] = at
			var e Event
			_ = json.Unmarshal(body, &e)
			bodies[id] = e
		}
		mu.Unlock()
	}))
	defer rc.Close()
	const nRules, nSensors = 1000, 200
	services := []string{"ocean", "weather", "airquality"}
	sensors := make([]string, nSensors)
	for i := range sensors {
		sensors[i] = uuid.NewString()
	}
	for i := 0; i < nRules; i++ {
		r, err := CreateRequest{Name: "b", Target: Target{SensorIDs: []string{sensors[i%nSensors]}},
			Condition: Condition{Parameter: "pm2_5_ug_per_m3", Op: OpAbove, Value: ptr(35)}, For: "PT0S", WebhookURL: rc.URL}.validate()
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := st.CreateRule(context.Background(), "k", r, nRules); err != nil {
			b.Fatal(err)
		}
	}
	logs := map[string]*memLog{}
	sources := map[string]stream.Source{}
	for _, s := range services {
		logs[s] = newMemLog()
		sources[s] = logs[s]
	}
	ctx, cancel := context.WithCancel(context.Background())
	hub := stream.NewHub(stream.HubOptions{Sources: sources, Wait: time.Second})
	ev := NewEvaluator(EvaluatorOptions{Store: st, Hub: hub, Leader: LocalLeader{}})
	sender := NewSender(SenderOptions{Store: st, Guard: loopback, Workers: 32, Poll: 100 * time.Millisecond})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); hub.Run(ctx) }()
	go func() { defer wg.Done(); ev.Run(ctx) }()
	go func() { defer wg.Done(); sender.Run(ctx) }()
	defer func() { cancel(); hub.Close(); wg.Wait() }()
	waitCursor(b, st)
	time.Sleep(time.Second)           // every service's cursor row
	appended := map[int64]time.Time{} // reading time (ms) -> append time
	var delays []time.Duration
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, v := range []float64{40, 20} { // fire, then resolve
			mu.Lock()
			clear(first)
			clear(bodies)
			mu.Unlock()
			for k, s := range sensors {
				at := t0.Add(time.Duration(len(appended)) * time.Millisecond)
				appended[at.UnixMilli()] = time.Now()
				logs[services[k%len(services)]].add(s, v, at)
			}
			deadline := time.Now().Add(2 * time.Minute)
			for {
				mu.Lock()
				n := len(first)
				mu.Unlock()
				if n >= nRules || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			mu.Lock()
			if len(first) < nRules {
				mu.Unlock()
				b.Fatalf("%d of %d events attempted within 2 minutes", len(first), nRules)
			}
			for id, at := range first {
				delays = append(delays, at.Sub(appended[bodies[id].ReadingTimestamp.UnixMilli()]))
			}
			mu.Unlock()
		}
	}
	b.StopTimer()
	slices.Sort(delays)
	p95 := delays[len(delays)*95/100]
	b.ReportMetric(p95.Seconds(), "p95-seconds")
	b.ReportMetric(delays[len(delays)/2].Seconds(), "p50-seconds")
	if p95 > 5*time.Second {
		b.Errorf("p95 commit to first attempt %s, over 5 s", p95)
	}
}
