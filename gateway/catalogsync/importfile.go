package catalogsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// File is a catalog file: what the services would say about themselves, for loading a
// catalog without running them (the `catalog import FILE` admin command, tests).
type File struct {
	Services []FileService `json:"services"`
}

// FileService is one service of a catalog File.
type FileService struct {
	ID              string              `json:"id"`
	Name            string              `json:"name"`
	Description     string              `json:"description"`
	Domain          string              `json:"domain"`
	TemporalPattern string              `json:"temporal_pattern"`
	Port            int                 `json:"port"`
	URL             string              `json:"url"`
	Providers       []contract.Provider `json:"providers"`
	Feeds           []contract.Feed     `json:"feeds"`
	Sensors         []contract.Station  `json:"sensors"`
}

// ImportResult is what Import did to one service.
type ImportResult struct {
	ServiceID string
	catalog.SyncResult
}

// Import reads a catalog File and applies each service with a full Sync, in file order:
// importing the same file twice changes nothing, and a service's sensors absent from the
// file are marked missing. The file is checked whole before anything is written; any bad
// station fails the import with every problem named.
func Import(ctx context.Context, st catalog.Store, r io.Reader) ([]ImportResult, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("catalog file: %w", err)
	}
	if len(f.Services) == 0 {
		return nil, errors.New("catalog file: no services")
	}
	batches := make([]catalog.SyncBatch, 0, len(f.Services))
	var problems []error
	ids := map[string]bool{}
	for i, s := range f.Services {
		if s.ID == "" {
			problems = append(problems, fmt.Errorf("catalog file: service #%d has no id", i+1))
			continue
		}
		if ids[s.ID] {
			problems = append(problems, fmt.Errorf("catalog file: service %q appears twice", s.ID))
			continue
		}
		ids[s.ID] = true
		sv := catalog.Service{ID: s.ID, Name: s.Name, Description: s.Description, Domain: s.Domain,
			TemporalPattern: s.TemporalPattern, Port: s.Port, URL: s.URL, Status: catalog.StatusActive}
		for _, p := range s.Providers {
			sv.Providers = append(sv.Providers, p.Slug)
		}
		for _, fd := range s.Feeds {
			sv.Feeds = append(sv.Feeds, fd.Slug)
		}
		b, rejects := batchFor(sv, s.Providers, s.Feeds, s.Sensors, true)
		if len(b.Sensors)+len(rejects) != len(s.Sensors) {
			rejects = append(rejects, fmt.Errorf("catalog file: service %q lists a station twice", s.ID))
		}
		problems = append(problems, rejects...)
		batches = append(batches, b)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("catalog file: %w", errors.Join(problems...))
	}
	out := make([]ImportResult, 0, len(batches))
	for _, b := range batches {
		res, err := st.Sync(ctx, b)
		if err != nil {
			return out, fmt.Errorf("catalog import of service %q: %w", b.Service.ID, err)
		}
		out = append(out, ImportResult{ServiceID: b.Service.ID, SyncResult: res})
	}
	return out, nil
}
