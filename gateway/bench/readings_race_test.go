package bench

import (
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/auth"
)

// TestReadingsHeadersNeverMix runs the readings chain (readingsGateway: the handler the
// binary serves, on net/http's server) under concurrent keep-alive clients and checks
// that no answer carries another request's data. The request path shares values between
// requests to save allocations: the request id's header value (one slice for request and
// response), ready-made Vary values, the rate-limit headers formatted into one string per
// request, cached answers. Each client has its own key (and so its own budget, which the
// x-ratelimit-limit header names), sends its own request ids, and asks at random for the
// small or the 500-row page, hot or with a distinct query, with or without gzip; every
// answer must be its own in each of these. Run under -race by make test.
func TestReadingsHeadersNeverMix(t *testing.T) {
	const clients = 12
	h, secrets := readingsGateway(t, clients)
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var wg sync.WaitGroup
	var mu sync.Mutex
	checked := 0
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 30 {
				ext := []string{"41001", "41001", "41001", "41002"}[rng.IntN(4)]
				limit := map[string]int{"41001": 2, "41002": 500}[ext]
				path := fmt.Sprintf("/api/v1/sensors/%s/readings?limit=%d", ext, limit)
				if rng.IntN(2) == 0 {
					path += "&since=" + time.Unix(946684800+int64(g*1000+i), 0).UTC().Format(time.RFC3339)
				}
				gz := rng.IntN(2) == 0
				reqID := fmt.Sprintf("client-%d-request-%d", g, i)
				req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
				req.Header.Set(auth.Header, secrets[g])
				req.Header.Set("X-Request-Id", reqID)
				if gz {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Errorf("client %d: %v", g, err)
					return
				}
				var body []byte
				if resp.Header.Get("Content-Encoding") == "gzip" {
					zr, err := gzip.NewReader(resp.Body)
					if err == nil {
						body, err = io.ReadAll(zr)
					}
					if err != nil {
						t.Errorf("client %d %s: gzip: %v", g, path, err)
					}
				} else {
					body, _ = io.ReadAll(resp.Body)
				}
				resp.Body.Close()
				hd := resp.Header
				switch {
				case resp.StatusCode != http.StatusOK:
					t.Errorf("client %d %s: %d %s", g, path, resp.StatusCode, body)
				case hd.Get("X-Request-Id") != reqID:
					t.Errorf("client %d %s: X-Request-Id %q, sent %q", g, path, hd.Get("X-Request-Id"), reqID)
				case !strings.Contains(string(body), `"external_id":"`+ext+`"`) || strings.Count(string(body), `"timestamp":`) != limit:
					t.Errorf("client %d %s: the answer is not sensor %s's %d-row page: %.120s", g, path, ext, limit, body)
				case strings.Join(hd.Values("Vary"), ", ") != "Accept-Encoding, Accept":
					t.Errorf("client %d %s: Vary %q", g, path, hd.Values("Vary"))
				case gz != (hd.Get("Content-Encoding") == "gzip"):
					t.Errorf("client %d %s: asked gzip %v, Content-Encoding %q", g, path, gz, hd.Get("Content-Encoding"))
				case hd.Get("X-Ratelimit-Limit") != strconv.Itoa(planRate(g)):
					t.Errorf("client %d %s: X-Ratelimit-Limit %q, its key's budget is %d", g, path, hd.Get("X-Ratelimit-Limit"), planRate(g))
				}
				// The keys' budgets are 1000 apart and each client spends 30: a remaining
				// count out of its own key's range is another key's.
				rem, err := strconv.Atoi(hd.Get("X-Ratelimit-Remaining"))
				if err != nil || rem >= planRate(g) || rem < planRate(g)-200 {
					t.Errorf("client %d %s: X-Ratelimit-Remaining %q, its key's budget is %d", g, path, hd.Get("X-Ratelimit-Remaining"), planRate(g))
				}
				if t.Failed() {
					return
				}
				mu.Lock()
				checked++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d concurrent answers checked", checked)
}
