package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Readings reads one station's readings from its service's internal API
// (contract.LatestPath and contract.ReadingsPath, which answer the public envelopes).
// Failures are *apierr.Error: the service's own error (no_readings, invalid_parameter,
// ...) or upstream_unavailable / upstream_timeout.
type Readings interface {
	Latest(ctx context.Context, svc catalog.Service, externalID string, q url.Values) (contract.LatestResponse, error)
	Readings(ctx context.Context, svc catalog.Service, externalID string, q url.Values) (contract.ReadingsResponse, error)
	Aggregate(ctx context.Context, svc catalog.Service, externalID string, q url.Values) (contract.AggregateResponse, error)
}

// HTTPReadingsConfig configures an HTTPReadings; zero fields take the defaults.
type HTTPReadingsConfig struct {
	Client        *http.Client
	InternalToken string
	// Timeout bounds one call, retries included (default 10s).
	Timeout time.Duration
	// MaxResponseBytes bounds an answer (default 32 MiB: 500 raw readings are large).
	MaxResponseBytes int64
	// Tracing, when enabled, traces each call and sends its traceparent to the service
	// (only for the default Client).
	Tracing *obs.Tracing
}

// HTTPReadings is Readings over plain HTTP. GETs are idempotent, so a refused connection
// or a 502/503 is retried twice with a short pause.
type HTTPReadings struct {
	client  *http.Client
	token   string
	timeout time.Duration
	max     int64
}

var _ Readings = (*HTTPReadings)(nil)

// NewHTTPReadings returns a Readings with cfg's settings.
func NewHTTPReadings(cfg HTTPReadingsConfig) *HTTPReadings {
	if cfg.Client == nil {
		cfg.Client = newPooledClient(cfg.Tracing)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 32 << 20
	}
	return &HTTPReadings{client: cfg.Client, token: cfg.InternalToken, timeout: cfg.Timeout, max: cfg.MaxResponseBytes}
}

// Latest implements Readings.
func (r *HTTPReadings) Latest(ctx context.Context, svc catalog.Service, externalID string, q url.Values) (contract.LatestResponse, error) {
	var out contract.LatestResponse
	if err := contract.ValidExternalID(externalID); err != nil {
		return out, apierr.New(apierr.SensorNotFound, "station id %q cannot be asked for: %v", clip(externalID, 64), err)
	}
	err := r.get(ctx, svc, contract.LatestPath(externalID), q, &out)
	return out, err
}

// Readings implements Readings.
func (r *HTTPReadings) Readings(ctx context.Context, svc catalog.Service, externalID string, q url.Values) (contract.ReadingsResponse, error) {
	var out contract.ReadingsResponse
	if err := contract.ValidExternalID(externalID); err != nil {
		return out, apierr.New(apierr.SensorNotFound, "station id %q cannot be asked for: %v", clip(externalID, 64), err)
	}
	err := r.get(ctx, svc, contract.ReadingsPath(externalID), q, &out)
	return out, err
}

// Aggregate implements Readings: the service's aggregate endpoint, as REST's aggregate
// route asks it.
func (r *HTTPReadings) Aggregate(ctx context.Context, svc catalog.Service, externalID string, q url.Values) (contract.AggregateResponse, error) {
	var out contract.AggregateResponse
	if err := contract.ValidExternalID(externalID); err != nil {
		return out, apierr.New(apierr.SensorNotFound, "station id %q cannot be asked for: %v", clip(externalID, 64), err)
	}
	err := r.get(ctx, svc, contract.AggregatePath(externalID), q, &out)
	return out, err
}

func (r *HTTPReadings) get(ctx context.Context, svc catalog.Service, path string, q url.Values, out any) error {
	if svc.URL == "" {
		return apierr.New(apierr.UpstreamUnavailable, "service %s has no internal address configured", svc.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	u := strings.TrimRight(svc.URL, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return upstreamErr(svc.ID, ctx.Err())
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		retry, err := r.once(ctx, svc, u, out)
		if err == nil {
			return nil
		}
		lastErr = err
		if !retry {
			break
		}
	}
	var ae *apierr.Error
	if errors.As(lastErr, &ae) && !strings.HasPrefix(ae.Code, "upstream_") {
		return ae
	}
	return upstreamErr(svc.ID, lastErr)
}

// once makes one GET; retry says whether another attempt may help.
func (r *HTTPReadings) once(ctx context.Context, svc catalog.Service, u string, out any) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if r.token != "" {
		req.Header.Set(contract.HeaderInternalToken, r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED), err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.max+1))
	if err != nil {
		return false, fmt.Errorf("read answer: %w", err)
	}
	if int64(len(body)) > r.max {
		return false, &statusError{status: resp.StatusCode, msg: fmt.Sprintf("answer larger than %d bytes", r.max)}
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		if err := json.Unmarshal(body, out); err != nil {
			return false, &statusError{status: resp.StatusCode, msg: "the answer is not the readings envelope: " + err.Error()}
		}
		return false, nil
	case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable:
		return true, &statusError{status: resp.StatusCode, msg: "service unavailable"}
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		var e apierr.Error
		if json.Unmarshal(body, &e) == nil && e.Code != "" && e.Message != "" {
			return false, &e
		}
		return false, &statusError{status: resp.StatusCode, msg: "client error without an error body"}
	default:
		return false, &statusError{status: resp.StatusCode, msg: "unexpected status"}
	}
}
