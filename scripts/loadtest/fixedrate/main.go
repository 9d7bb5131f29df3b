// Command fixedrate sends HTTP GETs at a fixed rate (open loop) and reports latency
// percentiles. Unlike wrk, which waits for each answer before sending the next request on a
// connection, it measures every request from the moment it was due, so a slow server
// cannot hide its queueing delay (no coordinated omission). wrk2 would do this but is not
// packaged in Debian; this is the few lines of it the load script needs.
//
//	fixedrate -rate 1000 -duration 10s -header 'x-api-key: K' URL [URL...]
//
// URLs are used round-robin; "{n}" in a URL is replaced by the request's sequence number,
// which makes every request distinct (an uncached request at the gateway).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fixedrate:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("fixedrate", flag.ContinueOnError)
	rate := fs.Int("rate", 1000, "requests per second")
	duration := fs.Duration("duration", 10*time.Second, "how long to send")
	warmup := fs.Duration("warmup", time.Second, "sent first and left out of the figures")
	timeout := fs.Duration("timeout", 5*time.Second, "per-request timeout")
	var hs headers
	fs.Var(&hs, "header", "request header 'Name: value' (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	urls := fs.Args()
	if len(urls) == 0 || *rate <= 0 || *duration <= 0 {
		return errors.New("want -rate > 0, -duration > 0 and at least one URL")
	}
	hdr := http.Header{}
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return fmt.Errorf("header %q: want 'Name: value'", h)
		}
		hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	client := &http.Client{
		Timeout: *timeout,
		Transport: &http.Transport{
			MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000, IdleConnTimeout: time.Minute,
			DisableCompression: true,
		},
	}
	interval := time.Second / time.Duration(*rate)
	total := int((*warmup + *duration) / interval)
	skip := int(*warmup / interval)
	lat := make([]time.Duration, total)
	statuses := make([]int, total)
	var wg sync.WaitGroup
	start := time.Now()
	ctx := context.Background()
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		u := strings.ReplaceAll(urls[i%len(urls)], "{n}", strconv.Itoa(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				statuses[i] = -1
				return
			}
			req.Header = hdr.Clone()
			resp, err := client.Do(req)
			if err != nil {
				statuses[i] = -1
				lat[i] = time.Since(due)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			statuses[i] = resp.StatusCode
			lat[i] = time.Since(due) // from when it was due: queueing counts
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	lat, statuses = lat[skip:], statuses[skip:]
	codes := map[int]int{}
	for _, s := range statuses {
		codes[s]++
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	fmt.Printf("requests %d at %d/s over %s (after %s warm-up); statuses %v\n", len(lat), *rate, elapsed.Round(time.Millisecond)-*warmup, *warmup, codes)
	fmt.Printf("p50 %s  p90 %s  p99 %s  max %s\n", us(pct(.50)), us(pct(.90)), us(pct(.99)), us(lat[len(lat)-1]))
	return nil
}

func us(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64) + "ms"
}
