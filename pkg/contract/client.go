package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Errors of the Client that say the service could not be asked, as opposed to a service
// that answered with an error (*apierr.Error or *HTTPError). Test with errors.Is.
var (
	// ErrUnreachable: connection refused or reset, unknown host, or the connection broke
	// before a whole answer arrived.
	ErrUnreachable = errors.New("service unreachable")
	// ErrTimeout: the service did not answer within the deadline.
	ErrTimeout = errors.New("service timed out")
)

// maxResponseBytes bounds what the client reads of one answer, so a broken service cannot
// exhaust the gateway's memory. A page of 1000 stations is well under 1 MiB.
const maxResponseBytes = 32 << 20

// DefaultClientTimeout is the per-request timeout of a Client built without an
// *http.Client.
const DefaultClientTimeout = 10 * time.Second

// HTTPError is a non-2xx answer whose body is not the JSON error shape.
type HTTPError struct {
	StatusCode int
	URL        string
	Body       string // the first bytes, for the log
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d: %s", e.URL, e.StatusCode, e.Body)
}

// ServiceError is a service's JSON error answer: the *apierr.Error it sent (reachable with
// errors.As) and the HTTP status it came with.
type ServiceError struct {
	StatusCode int
	URL        string
	Err        *apierr.Error
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d: %s", e.URL, e.StatusCode, e.Err.Error())
}

// Unwrap exposes the *apierr.Error.
func (e *ServiceError) Unwrap() error { return e.Err }

// Client calls the internal API of one backing service (used by the gateway's catalog
// sync and health probes). It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// NewClient returns a client of the service at baseURL (e.g. http://127.0.0.1:8081). token,
// when not empty, is sent in HeaderInternalToken. A nil hc gets a client with
// DefaultClientTimeout.
func NewClient(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: DefaultClientTimeout}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, hc: hc}
}

// BaseURL is the service address the client calls.
func (c *Client) BaseURL() string { return c.base }

// Meta fetches GET /v1/meta.
func (c *Client) Meta(ctx context.Context) (ServiceMeta, error) {
	var m ServiceMeta
	err := c.get(ctx, PathMeta, nil, &m)
	return m, err
}

// Health fetches GET /v1/health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.get(ctx, PathHealth, nil, &h)
	return h, err
}

// Sensors fetches one page of GET /v1/sensors; a zero updatedSince lists every station,
// otherwise only those changed since then.
func (c *Client) Sensors(ctx context.Context, updatedSince time.Time, page, limit int) (StationPage, error) {
	var p StationPage
	q := url.Values{}
	if !updatedSince.IsZero() {
		q.Set("updated_since", FormatTime(updatedSince))
	}
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	err := c.get(ctx, PathSensors, q, &p)
	return p, err
}

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("contract: GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set(HeaderInternalToken, c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("contract: GET %s: %w", u, classify(ctx, err))
	}
	defer resp.Body.Close()
	body, err := readBody(resp)
	if err != nil {
		return fmt.Errorf("contract: GET %s: read body: %w", u, classify(ctx, err))
	}
	if len(body) > maxResponseBytes {
		return fmt.Errorf("contract: GET %s: answer larger than %d bytes", u, maxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var ae apierr.Error
		if json.Unmarshal(body, &ae) == nil && ae.Code != "" {
			return &ServiceError{StatusCode: resp.StatusCode, URL: u, Err: &ae}
		}
		snippet := string(body)
		if len(snippet) > 200 {
			snippet = snippet[:200] + "..."
		}
		return &HTTPError{StatusCode: resp.StatusCode, URL: u, Body: snippet}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("contract: GET %s: decode answer: %w", u, err)
	}
	return nil
}

// classify adds ErrTimeout or ErrUnreachable to a transport error, keeping it wrapped.
// A cancelled caller context is neither: it is returned as is.
func classify(ctx context.Context, err error) error {
	if ctx.Err() == context.Canceled {
		return err
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, err)
}
