package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/auth"
)

type answer struct {
	status int
	header http.Header
	body   []byte // decoded
	raw    int    // bytes on the wire
}

func fetch(t testing.TB, c *http.Client, url string, hdr ...string) answer {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(auth.Header, testKey)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw, raw: len(raw)}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: not gzip: %v", url, err)
		}
		if a.body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: broken gzip: %v", url, err)
		}
	}
	return a
}

// TestGzipAnswersNeverMix sends many concurrent requests for different catalog pages, half
// accepting gzip, through the whole chain on a real server: every compressed answer must
// decode to exactly the identity answer of its own URL (pooled compressors and writers
// shared by requests must never mix bytes). It also checks the rules around it: small
// answers and clients that do not accept gzip get identity, Vary is always set, and ETag/304
// work for both encodings.
func TestGzipAnswersNeverMix(t *testing.T) {
	t.Parallel()
	_, h := newTestServer(t, 120, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 32}}

	var urls []string
	for limit := 5; limit <= 50; limit += 15 {
		for page := 1; page <= 2; page++ {
			urls = append(urls, fmt.Sprintf("%s/api/v1/sensors?limit=%d&page=%d", srv.URL, limit, page))
		}
	}
	identity := map[string]answer{}
	for _, u := range urls {
		a := fetch(t, c, u, "Accept-Encoding", "identity")
		if a.status != 200 || a.header.Get("Content-Encoding") != "" || !strings.Contains(a.header.Get("Vary"), "Accept-Encoding") {
			t.Fatalf("%s identity: %d, encoding %q, vary %q", u, a.status, a.header.Get("Content-Encoding"), a.header.Get("Vary"))
		}
		if len(a.body) < MinGzipSize {
			t.Fatalf("%s: %d bytes, want pages of at least %d for this test", u, len(a.body), MinGzipSize)
		}
		identity[u] = a
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	var compressed, saved int
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 40 {
				u := urls[rng.IntN(len(urls))]
				a := fetch(t, c, u, "Accept-Encoding", "gzip, deflate")
				want := identity[u]
				if a.header.Get("Content-Encoding") != "gzip" {
					t.Errorf("%s: not compressed (%q)", u, a.header.Get("Content-Encoding"))
					return
				}
				if !bytes.Equal(a.body, want.body) {
					t.Errorf("%s: the gzip answer decodes to another answer (%d bytes, want %d)", u, len(a.body), len(want.body))
					return
				}
				if got, wantTag := a.header.Get("ETag"), strings.TrimSuffix(want.header.Get("ETag"), `"`)+gzipETagSuffix+`"`; got != wantTag {
					t.Errorf("%s: gzip ETag %q, want %q", u, got, wantTag)
				}
				mu.Lock()
				compressed++
				saved += len(want.body) - a.raw
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d concurrent gzip answers checked; %d bytes saved in all", compressed, saved)

	u := urls[0]
	id := identity[u]
	gz := fetch(t, c, u, "Accept-Encoding", "gzip")
	// 304 for either validator, each answered with the tag the client holds.
	for _, tc := range []struct{ name, inm, ae, wantTag string }{
		{"identity tag", id.header.Get("ETag"), "identity", id.header.Get("ETag")},
		{"gzip tag", gz.header.Get("ETag"), "gzip", gz.header.Get("ETag")},
		{"weak gzip tag", "W/" + gz.header.Get("ETag"), "gzip", gz.header.Get("ETag")},
	} {
		a := fetch(t, c, u, "Accept-Encoding", tc.ae, "If-None-Match", tc.inm)
		if a.status != http.StatusNotModified || len(a.body) != 0 || a.header.Get("ETag") != tc.wantTag {
			t.Errorf("%s: %d, %d bytes, ETag %q; want 304, no body, %q", tc.name, a.status, len(a.body), a.header.Get("ETag"), tc.wantTag)
		}
	}
	// A stale tag still gets the answer.
	if a := fetch(t, c, u, "Accept-Encoding", "gzip", "If-None-Match", `"stale-gzip"`); a.status != 200 || !bytes.Equal(a.body, id.body) {
		t.Errorf("stale tag: %d", a.status)
	}
	// A small answer is sent as it is.
	if a := fetch(t, c, srv.URL+"/healthz", "Accept-Encoding", "gzip"); a.header.Get("Content-Encoding") != "" || !strings.Contains(a.header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("/healthz (small): encoding %q, vary %q", a.header.Get("Content-Encoding"), a.header.Get("Vary"))
	}
}

// BenchmarkGzipAnswer measures the cost of compressing a 1.8 KB-class catalog page through
// the chain against sending it as it is.
func BenchmarkGzipAnswer(b *testing.B) {
	_, h := newTestServer(b, 50, nil)
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/sensors?limit=10", nil)
				req.Header.Set(auth.Header, testKey)
				req.Header.Set("Accept-Encoding", enc)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				n = w.Body.Len()
			}
			b.ReportMetric(float64(n), "bytes/answer")
		})
	}
}
