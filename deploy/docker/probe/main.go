// Command probe is the container healthcheck of the sensorgate images: it GETs one URL and
// exits 0 on a 2xx answer, 1 otherwise. The runtime images are distroless or scratch and
// have no shell, curl or wget, so the HEALTHCHECK needs a static binary of its own; it is
// a separate module without dependencies so that it builds anywhere in a second.
//
// Usage: probe [-print] [URL]   (default: $PROBE_URL)
//
// -print copies the answer's body to stdout, so that tests can read a replica's /metrics
// through `docker exec` on an image without any other tool.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// timeout bounds the whole check, below Docker's default healthcheck timeout (30s) and the
// images' own (3s), so a stalled server is reported as unhealthy instead of hanging.
const timeout = 2500 * time.Millisecond

func main() {
	target := os.Getenv("PROBE_URL")
	args := os.Args[1:]
	var out io.Writer = io.Discard
	if len(args) > 0 && args[0] == "-print" {
		out, args = os.Stdout, args[1:]
	}
	if len(args) > 0 {
		target = args[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	// The container's own internal token, for the routes behind it (/metrics of a service);
	// the health probes do not need it.
	err := check(ctx, tokenTransport{http.DefaultTransport, os.Getenv("INTERNAL_TOKEN")}, target, out)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

// check GETs target, copies its body to body, and reports why it is not healthy: a bad
// URL, no answer, or a status outside 2xx.
func check(ctx context.Context, rt http.RoundTripper, target string, body io.Writer) error {
	if target == "" {
		return errors.New("no URL: pass it as the argument or set PROBE_URL")
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("want an http(s) URL such as http://127.0.0.1:8080/healthz, got %q", target)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", u, err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(body, io.LimitReader(resp.Body, 16<<20)); err != nil {
		return fmt.Errorf("GET %s: read: %w", u, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return nil
}

// tokenTransport sends X-Internal-Token when the environment holds one.
type tokenTransport struct {
	rt    http.RoundTripper
	token string
}

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("X-Internal-Token", t.token)
	}
	return t.rt.RoundTrip(r)
}
