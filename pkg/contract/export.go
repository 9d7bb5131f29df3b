package contract

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Bulk export limits (docs/api-decisions.md "Wave 2", Export).
const (
	MaxExportDays    = 366
	MaxExportSensors = 1000
	// ExportRowsPerRequest is the cost rule of an export: one request of the key's budget
	// per started block of this many rows sent (the first is the request itself).
	ExportRowsPerRequest = 10_000
	// PathExport is a service's streaming export of its stations' readings:
	// ?station=a&station=b&since=&until=&parameter=&format=csv|ndjson&header=false.
	PathExport = "/v1/readings/export"
)

// ExportQuery is the time range and parameters of an export.
type ExportQuery struct {
	Since, Until time.Time
	Parameters   []string
	// Lineage (lineage=true) adds each measurement's conversion: NDJSON measurements carry
	// `conversion`, CSV rows five more columns (formats.LineageHeader).
	Lineage bool
	// QC keeps the measurements whose quality flag it holds (qc=; default all).
	QC QCFilter
}

// ParseExportQuery parses since/until or days (one of them required; until defaults to
// now) and parameter; the range is at most MaxExportDays. Errors name the parameter.
func ParseExportQuery(v url.Values, now time.Time) (ExportQuery, error) {
	var q ExportQuery
	var err error
	if err := parseSelection(v, &q.Parameters, &q.Lineage, &q.QC); err != nil {
		return q, err
	}
	days, since, until := v.Get("days"), v.Get("since"), v.Get("until")
	switch {
	case days != "" && (since != "" || until != ""):
		return q, apierr.Invalid("days", "cannot be combined with since or until")
	case days != "":
		d, err := strconv.ParseFloat(days, 64)
		if err != nil || !(d > 0) || d > MaxExportDays {
			return q, apierr.Invalid("days", "want a number of days greater than 0 and at most %d, got %q", MaxExportDays, days)
		}
		q.Until = now.UTC()
		q.Since = q.Until.Add(-time.Duration(d * float64(24*time.Hour)))
		return q, nil
	case since == "":
		return q, apierr.Invalid("since", "an export needs a range: since (and until, default now) or days, at most %d days", MaxExportDays)
	}
	if q.Since, err = timeParam("since", since); err != nil {
		return q, err
	}
	q.Until = now.UTC()
	if until != "" {
		if q.Until, err = timeParam("until", until); err != nil {
			return q, err
		}
	}
	if !q.Until.After(q.Since) {
		return q, apierr.Invalid("until", "must be after since")
	}
	if q.Until.Sub(q.Since) > MaxExportDays*24*time.Hour {
		return q, apierr.Invalid("since", "the range %s .. %s is longer than %d days; export it in parts", FormatTime(q.Since), FormatTime(q.Until), MaxExportDays)
	}
	return q, nil
}

// ExportValues are the query of a service export call for stations (one station
// parameter each: an external id may hold a comma).
func ExportValues(stations []string, q ExportQuery, format string, header bool) url.Values {
	v := url.Values{"station": stations, "since": {FormatTime(q.Since)}, "until": {FormatTime(q.Until)}, "format": {format}}
	if len(q.Parameters) > 0 {
		v.Set("parameter", strings.Join(q.Parameters, ","))
	}
	if !header {
		v.Set("header", "false")
	}
	if q.Lineage {
		v.Set("lineage", "true")
	}
	if !q.QC.All() {
		v.Set("qc", q.QC.String())
	}
	return v
}

// Export calls GET PathExport with the query of ExportValues and returns the service's
// 200 open, for the caller to read as it arrives and close: the answer is too large to
// hold. RouteStream's deadline bounds the wait for its headers, not the stream, which
// runs until the service ends it or ctx ends (a caller that goes away closes the call and
// the service stops its scan). Any other answer is an error: the service's own 4xx error
// as an *apierr.Error, anything else as Get's failures are.
func (c *Client) Export(ctx context.Context, q url.Values) (*http.Response, error) {
	start := time.Now()
	c.recycle()
	resp, outcome, err := c.open(ctx, withQuery(PathExport, q.Encode()))
	c.observe(outcome, start)
	return resp, err
}

func (c *Client) open(parent context.Context, pathQuery string) (*http.Response, string, error) {
	ctx, cancel := context.WithCancel(parent)
	timeout := c.Deadline(RouteStream)
	headerTimer := time.AfterFunc(timeout, cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+pathQuery, nil)
	if err != nil {
		cancel()
		return nil, obs.OutcomeUnavailable, apierr.New(apierr.UpstreamUnavailable, "service %q: bad request path", c.id)
	}
	req.Header["Accept"] = []string{"application/x-ndjson, text/csv, application/json"}
	if c.sh.tokenV != nil {
		req.Header[HeaderInternalToken] = c.sh.tokenV
	}
	resp, err := c.do(ctx, req, true)
	if !headerTimer.Stop() { // the headers came too late, if at all
		cancel()
		if resp != nil {
			_ = resp.Body.Close()
		}
		outcome, err := c.timedOut(parent, RouteStream, timeout, err)
		return nil, outcome, err
	}
	if err != nil {
		cancel()
		outcome, err := c.failure(parent, ctx, RouteStream, timeout, err)
		return nil, outcome, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		cancel()
		status, b, outcome, err := c.judge(parent, RouteStream, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		if err != nil {
			return nil, outcome, err
		}
		var e apierr.Error
		if json.Unmarshal(b, &e) != nil || e.Code == "" || status == http.StatusOK {
			return nil, obs.OutcomeServerError, fmt.Errorf("%w: %w", apierr.New(apierr.UpstreamBadResponse, "service %q gave an answer the gateway does not pass on", c.id), ErrUnreachable)
		}
		return nil, outcome, &e
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, obs.OutcomeOK, nil
}

// cancelOnClose releases an open call's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// ExportFailure is the last record of a CSV export whose service failed mid-answer: the
// service writes "# <code>: <message>" in the first field and ends the answer
// (services/runtime/httpapi export).
type ExportFailure struct{ Code, Message string }

func (e *ExportFailure) Error() string {
	return "the service failed mid-answer: " + e.Code + ": " + e.Message
}

// CSVRecords reads a service's CSV export (header=false) record by record and hands each
// to row; the record's slice is reused by the next call. It ends with row's error, an
// *ExportFailure when the service ended its answer with one, or an error when the answer
// was cut inside a record.
func CSVRecords(body io.Reader, row func(rec []string) error) error {
	lb := &lastByte{r: body}
	cr := csv.NewReader(bufio.NewReaderSize(lb, 64<<10))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			if lb.n > 0 && lb.last != '\n' {
				return fmt.Errorf("the service's answer ended mid-row after %d rows", n)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the service's answer after %d rows: %w", n, err)
		}
		if lb.eof && cr.InputOffset() == lb.n && lb.last != '\n' {
			// The answer's last bytes, without the newline that ends a record.
			return fmt.Errorf("the service's answer ended mid-row after %d rows", n)
		}
		if len(rec) > 0 && strings.HasPrefix(rec[0], "# ") {
			code, msg, _ := strings.Cut(strings.TrimPrefix(rec[0], "# "), ": ")
			return &ExportFailure{Code: code, Message: msg}
		}
		if err := row(rec); err != nil {
			return err
		}
	}
}

// lastByte remembers how much was read through it, its last byte and whether it
// ended, to tell an answer that ended after a whole record from one cut inside a record.
type lastByte struct {
	r    io.Reader
	n    int64
	last byte
	eof  bool
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.n += int64(n)
		l.last = p[n-1]
	}
	l.eof = l.eof || err != nil
	return n, err
}
