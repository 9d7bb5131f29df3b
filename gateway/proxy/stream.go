package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Stream calls GET pathQuery on service serviceID for an answer too large to hold (the
// bulk export) and returns it open: a 200 whose body the caller reads as it arrives and
// closes. It is not retried (its rows are passed on as they come) and has no deadline but
// ctx's, which is the client's: a client that goes away closes the call, and the service
// stops its scan. A service error is returned as an *apierr.Error (its own 4xx passed on;
// refused, reset or 5xx: 502).
func (u *Upstreams) Stream(ctx context.Context, serviceID, pathQuery string) (*http.Response, error) {
	s, ok := u.services[serviceID]
	if !ok {
		return nil, apierr.New(apierr.UpstreamUnavailable, "service %q is not configured on this gateway", serviceID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+pathQuery, nil)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: build request: %w", s.id, err)
	}
	if u.tokenV != nil {
		req.Header[contract.HeaderInternalToken] = u.tokenV
	}
	if id := obs.RequestID(ctx); id != "" {
		req.Header[contract.HeaderRequestID] = []string{id}
	}
	resp, err := s.rt.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		u.opt.Logger.WarnContext(ctx, "upstream stream failed", "service", s.id, "err", err)
		return nil, apierr.New(apierr.UpstreamUnavailable, "service %q did not answer", s.id)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e apierr.Error
	if resp.StatusCode < 500 && isJSONError(resp.Header.Get("Content-Type"), body) && json.Unmarshal(body, &e) == nil && e.Code != "" {
		return nil, &e
	}
	u.opt.Logger.WarnContext(ctx, "upstream stream error", "service", s.id, "status", resp.StatusCode, "body_bytes", len(body))
	return nil, apierr.New(apierr.UpstreamUnavailable, "service %q failed to answer (HTTP %d)", s.id, resp.StatusCode)
}
