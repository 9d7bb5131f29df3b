package ingest

import "github.com/sensorgate/sensorgate/pkg/obs"

// IngestState is Health in the form of the ingest metrics (obs.NewIngestCollector), so
// that the metrics and GET /v1/health can never disagree.
func (s *Scheduler) IngestState() []obs.ProviderIngest {
	hs := s.Health()
	out := make([]obs.ProviderIngest, len(hs))
	for i, h := range hs {
		out[i] = obs.ProviderIngest{Slug: h.Slug, Mode: h.Mode, LagSeconds: h.LagSeconds,
			RowsIngested: h.RowsIngested, RowsRejected: h.RowsRejected}
		if h.LastSuccessAt != nil {
			out[i].LastSuccess = h.LastSuccessAt.Time
		}
		if h.LastErrorAt != nil {
			out[i].LastError = h.LastErrorAt.Time
		}
	}
	return out
}
