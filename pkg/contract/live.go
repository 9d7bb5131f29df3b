package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Internal paths of the live features (docs/live.md).
const (
	// PathLatestBatch (POST, LatestBatchRequest): the newest reading of many stations in
	// one call, for the gateway's area latest.
	PathLatestBatch = "/v1/readings/latest"
	// PathEvents (GET ?after=&limit=&wait=): the service's log of stored readings, which
	// each gateway follows once (long poll) and replays from for Last-Event-ID.
	PathEvents = "/v1/events"
)

// MaxLatestBatch bounds the stations of one batched latest call: one area-latest page.
const MaxLatestBatch = 5000

// Events paging bounds of PathEvents.
const (
	DefaultEventsLimit = 500
	MaxEventsLimit     = 5000
	// MaxEventsWait bounds the long poll of PathEvents.
	MaxEventsWait = 30 * time.Second
)

// LatestBatchRequest is the body of POST PathLatestBatch.
type LatestBatchRequest struct {
	ExternalIDs []string `json:"external_ids"`
	// QC is the area's qc= filter as spelled there ("" or all: every measurement).
	QC string `json:"qc,omitempty"`
}

// LatestItem is one station's newest reading; Timestamp is nil when it never reported
// (Measurements is then an empty array).
type LatestItem struct {
	ExternalID         string          `json:"external_id"`
	ReportingIntervalS int             `json:"reporting_interval_s"`
	Timestamp          *Time           `json:"timestamp"`
	FetchedAt          *Time           `json:"fetched_at"`
	Measurements       json.RawMessage `json:"measurements"`
}

// LatestBatchResponse answers PathLatestBatch: the known stations among those asked, in
// no particular order (unknown ids are left out).
type LatestBatchResponse struct {
	ServiceID  string       `json:"service_id"`
	ServerTime Time         `json:"server_time"`
	Items      []LatestItem `json:"items"`
}

// Event is one stored reading in a service's event log. Reading is the object of a
// readings page item (id, timestamp, measurements, location).
type Event struct {
	Pos        string          `json:"pos"`
	SensorID   string          `json:"sensor_id"`
	ExternalID string          `json:"external_id"`
	Reading    json.RawMessage `json:"reading"`
}

// EventsPage answers PathEvents: the events after the asked position, oldest first.
// Last is the position of the newest event in the log when the answer was made (the
// caller's next after when Events is empty); Oldest that of the oldest retained event
// ("" when the log is empty), so a caller resuming from before it knows it missed some.
type EventsPage struct {
	Events []Event `json:"events"`
	Last   string  `json:"last"`
	Oldest string  `json:"oldest"`
}

// Position orders the entries of one service's event log: milliseconds of the log's
// clock, then a sequence within the millisecond. It is a Redis Stream entry id, and the
// in-process log makes its own the same way, so one cursor form serves both.
type Position struct{ MS, Seq uint64 }

// ParsePosition reads "ms-seq" (or "ms", sequence 0).
func ParsePosition(s string) (Position, error) {
	msText, seqText, hasSeq := strings.Cut(s, "-")
	ms, err := strconv.ParseUint(msText, 10, 64)
	if err != nil {
		return Position{}, fmt.Errorf("position %q: want ms-seq", s)
	}
	var seq uint64
	if hasSeq {
		if seq, err = strconv.ParseUint(seqText, 10, 64); err != nil {
			return Position{}, fmt.Errorf("position %q: want ms-seq", s)
		}
	}
	return Position{ms, seq}, nil
}

func (p Position) String() string {
	return strconv.FormatUint(p.MS, 10) + "-" + strconv.FormatUint(p.Seq, 10)
}

// Compare is -1, 0 or +1 as p is before, at or after q.
func (p Position) Compare(q Position) int {
	switch {
	case p.MS < q.MS:
		return -1
	case p.MS > q.MS:
		return 1
	case p.Seq < q.Seq:
		return -1
	case p.Seq > q.Seq:
		return 1
	}
	return 0
}

// LatestBatch calls POST PathLatestBatch; the service keeps the measurements whose
// quality flag qc holds.
func (c *Client) LatestBatch(ctx context.Context, externalIDs []string, qc QCFilter) (LatestBatchResponse, error) {
	var out LatestBatchResponse
	req := LatestBatchRequest{ExternalIDs: externalIDs}
	if !qc.All() {
		req.QC = qc.String()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return out, fmt.Errorf("contract: latest batch: %w", err)
	}
	err = c.do(ctx, http.MethodPost, PathLatestBatch, nil, body, &out)
	return out, err
}

// Events calls GET PathEvents: after "" asks only for the log's current head (Last);
// wait > 0 holds the answer until an event arrives or wait passes. The client's
// http.Client timeout must exceed wait.
func (c *Client) Events(ctx context.Context, after string, limit int, wait time.Duration) (EventsPage, error) {
	var p EventsPage
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if wait > 0 {
		q.Set("wait", strconv.FormatInt(wait.Milliseconds(), 10)+"ms")
	}
	err := c.do(ctx, http.MethodGet, PathEvents, q, nil, &p)
	return p, err
}

// do is get with a method and an optional JSON body, answered the same way.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	if method == http.MethodGet {
		return c.get(ctx, path, q, out)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("contract: %s %s: %w", method, u, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set(HeaderInternalToken, c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("contract: %s %s: %w", method, u, classify(ctx, err))
	}
	defer resp.Body.Close()
	b, err := readBody(resp)
	if err != nil {
		return fmt.Errorf("contract: %s %s: read body: %w", method, u, classify(ctx, err))
	}
	if len(b) > maxResponseBytes {
		return fmt.Errorf("contract: %s %s: answer larger than %d bytes", method, u, maxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var ae apierr.Error
		if json.Unmarshal(b, &ae) == nil && ae.Code != "" {
			return &ServiceError{StatusCode: resp.StatusCode, URL: u, Err: &ae}
		}
		return &HTTPError{StatusCode: resp.StatusCode, URL: u, Body: string(b[:min(len(b), 200)])}
	}
	if d, ok := out.(bodyDecoder); ok {
		err = d.decodeJSON(b)
	} else {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		return fmt.Errorf("contract: %s %s: decode answer: %w", method, u, err)
	}
	return nil
}

// bodyDecoder is an answer type with a decoder of its own, faster than encoding/json
// (LatestBatchResponse).
type bodyDecoder interface{ decodeJSON([]byte) error }

// IsUnavailable reports whether err says the service could not be asked or failed (as
// opposed to refusing the request): the cases where the gateway marks its data
// unavailable and carries on.
func IsUnavailable(err error) bool {
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrTimeout) {
		return true
	}
	var se *ServiceError
	if errors.As(err, &se) {
		return se.StatusCode >= 500
	}
	var he *HTTPError
	return errors.As(err, &he) && he.StatusCode >= 500
}

// readBody reads an answer of at most maxResponseBytes (one byte more tells a larger
// one). A declared length is read into one buffer of that size: io.ReadAll grows its
// buffer from 512 bytes, about ten copies for a 340-sensor batch answer of ~300 kB
// (docs/live.md, "Area latest").
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n > 0 && n <= maxResponseBytes {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
}
