package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sensorgate/sensorgate/services/observation"
)

// item is one payload to ingest; done is told whether it landed, so a live source can
// forget the validators of a document whose batch failed and fetch it again.
type item struct {
	payload observation.Payload
	origin  string // file path or URL, for logs and errors
	done    func(ok bool)
}

// source yields the payloads due now.
type source interface {
	poll(ctx context.Context) ([]item, error)
	// interval is the wait between polls.
	interval() time.Duration
}

// simSource replays a deterministic simulator: the configured days of history first, then
// every simPollEvery (or cadence, if shorter) the window since the previous poll
// (overlapping by one cadence, which the store's idempotency absorbs), so readings land
// at their real cadence.
type simSource struct {
	sim     observation.Simulator
	cfg     observation.SimConfig
	days    int
	cadence time.Duration
	now     func() time.Time
	last    time.Time
}

// simPollEvery is the longest wait between two polls of a simulator: readings are stored
// (and reach live streams) within this long of their time, as a real station's would,
// instead of a whole cadence late in one batch.
const simPollEvery = 15 * time.Second

func (s *simSource) interval() time.Duration { return min(s.cadence, simPollEvery) }

func (s *simSource) poll(context.Context) ([]item, error) {
	now := s.now().UTC()
	var out []item
	if s.last.IsZero() {
		meta, err := s.sim.SimStations(s.cfg)
		if err != nil {
			return nil, fmt.Errorf("simulate stations: %w", err)
		}
		for _, p := range meta {
			out = append(out, item{payload: p, origin: "simulator stations"})
		}
		s.last = now.Add(-time.Duration(s.days) * 24 * time.Hour)
	}
	from := s.last.Add(-s.cadence)
	ps, err := s.sim.Simulate(s.cfg, from, now)
	if err != nil {
		return out, fmt.Errorf("simulate %s..%s: %w", from.Format(time.RFC3339), now.Format(time.RFC3339), err)
	}
	for _, p := range ps {
		out = append(out, item{payload: p, origin: "simulator " + p.StationID})
	}
	s.last = now
	return out, nil
}

// SidecarSuffix names a recorded file's sidecar: "<file>.station" holds the station id of a
// document that does not name its station (Ambient device data, OpenAQ v3 sensor pages),
// as the request URL did when it was recorded. Sidecars are not documents themselves.
const SidecarSuffix = ".station"

// filesSource replays the recorded files of a folder that the provider claims, and picks
// up files added or changed later.
type filesSource struct {
	dir      string
	classify func(rel string, body []byte) (observation.Payload, bool)
	every    time.Duration
	maxSize  int64
	mu       sync.Mutex
	seen     map[string]string // rel path -> size/mtime it was ingested at
}

func (s *filesSource) interval() time.Duration { return s.every }

func (s *filesSource) poll(ctx context.Context) ([]item, error) {
	var paths []string
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read source folder %s: %w", s.dir, err)
	}
	sort.Strings(paths)
	var out []item
	var errs []error
	for _, path := range paths {
		if ctx.Err() != nil {
			break
		}
		info, err := os.Stat(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rel, _ := filepath.Rel(s.dir, path)
		if strings.HasSuffix(rel, SidecarSuffix) {
			continue // read with the document it names the station of
		}
		stamp := fmt.Sprintf("%d/%d", info.Size(), info.ModTime().UnixNano())
		s.mu.Lock()
		done := s.seen[rel] == stamp
		s.mu.Unlock()
		if done {
			continue
		}
		if info.Size() > s.maxSize {
			errs = append(errs, fmt.Errorf("file %s is %d bytes, over the %d limit", rel, info.Size(), s.maxSize))
			s.mark(rel, stamp)
			continue
		}
		body, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p, ok := s.classify(rel, body)
		if !ok {
			s.mark(rel, stamp) // not this provider's; do not read it again
			continue
		}
		if p.StationID == "" {
			if sc, err := os.ReadFile(path + SidecarSuffix); err == nil {
				p.StationID = strings.TrimSpace(string(sc))
			}
		}
		if p.Reference.IsZero() {
			p.Reference = info.ModTime().UTC()
		}
		out = append(out, item{payload: p, origin: rel, done: func(ok bool) {
			if ok {
				s.mark(rel, stamp)
			}
		}})
	}
	return out, errors.Join(errs...)
}

func (s *filesSource) mark(rel, stamp string) {
	s.mu.Lock()
	s.seen[rel] = stamp
	s.mu.Unlock()
}

// liveSource polls the provider's API with conditional GETs: a document that has not
// changed since the last poll (ETag / Last-Modified) costs the provider a 304 only.
type liveSource struct {
	client    *retryablehttp.Client
	targets   []Target
	userAgent string
	every     time.Duration
	maxBody   int64
	now       func() time.Time

	mu    sync.Mutex
	state map[string]*validators
}

type validators struct {
	etag, lastModified string
	lastFetch          time.Time
}

func (s *liveSource) interval() time.Duration { return s.every }

func (s *liveSource) poll(ctx context.Context) ([]item, error) {
	var out []item
	var errs []error
	for _, t := range s.targets {
		if ctx.Err() != nil {
			break
		}
		it, ok, err := s.fetch(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			out = append(out, it)
		}
	}
	return out, errors.Join(errs...)
}

func (s *liveSource) fetch(ctx context.Context, t Target) (item, bool, error) {
	s.mu.Lock()
	v := s.state[t.URL]
	if v == nil {
		v = &validators{}
		s.state[t.URL] = v
	}
	prev := *v
	s.mu.Unlock()
	if t.MetadataOnly && !prev.lastFetch.IsZero() && s.now().Sub(prev.lastFetch) < time.Hour {
		return item{}, false, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := retryablehttp.NewRequestWithContext(rctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return item{}, false, fmt.Errorf("request %s: %w", redact(t.URL), err)
	}
	for k, vs := range t.Header {
		for _, x := range vs {
			req.Header.Add(k, x)
		}
	}
	req.Header.Set("User-Agent", s.userAgent)
	if prev.etag != "" {
		req.Header.Set("If-None-Match", prev.etag)
	}
	if prev.lastModified != "" {
		req.Header.Set("If-Modified-Since", prev.lastModified)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return item{}, false, fmt.Errorf("GET %s: %w", redact(t.URL), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		s.touch(t.URL, prev.etag, prev.lastModified)
		return item{}, false, nil
	case resp.StatusCode != http.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return item{}, false, fmt.Errorf("GET %s: status %d", redact(t.URL), resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.maxBody+1))
	if err != nil {
		return item{}, false, fmt.Errorf("GET %s: read body: %w", redact(t.URL), err)
	}
	if int64(len(body)) > s.maxBody {
		return item{}, false, fmt.Errorf("GET %s: body over %d bytes", redact(t.URL), s.maxBody)
	}
	etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	return item{
		payload: observation.Payload{Format: t.Format, StationID: t.StationID, Body: body, Reference: s.now().UTC()},
		origin:  redact(t.URL),
		done: func(ok bool) {
			if ok {
				s.touch(t.URL, etag, lm)
			}
		},
	}, true, nil
}

func (s *liveSource) touch(url, etag, lastModified string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[url] = &validators{etag: etag, lastModified: lastModified, lastFetch: s.now()}
}

// redact drops the query of a URL for logs and health: API keys travel there.
func redact(u string) string {
	for i := 0; i < len(u); i++ {
		if u[i] == '?' {
			return u[:i] + "?…"
		}
	}
	return u
}
