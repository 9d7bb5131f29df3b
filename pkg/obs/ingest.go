package obs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Ingest metric names (NewIngestCollector).
const (
	MetricIngestReadings    = Namespace + "_ingest_readings_total"
	MetricIngestRejected    = Namespace + "_ingest_rows_rejected_total"
	MetricIngestLastSuccess = Namespace + "_ingest_last_success_timestamp_seconds"
	MetricIngestLastError   = Namespace + "_ingest_last_error_timestamp_seconds"
	MetricIngestLag         = Namespace + "_ingest_lag_seconds"
)

// ProviderIngest is one provider's ingest state as a service's health reports it
// (contract.ProviderHealth, which this package cannot name: the contract's client uses
// this package's transport).
type ProviderIngest struct {
	Slug, Mode             string
	LastSuccess, LastError time.Time // zero: never
	LagSeconds             *float64
	RowsIngested           int64
	RowsRejected           map[string]int64
}

// ingestCollector turns a service's per-provider ingest state into metrics at scrape time,
// so the metrics and GET /v1/health can never disagree and the scheduler needs no second
// set of counters.
type ingestCollector struct {
	health                              func() []ProviderIngest
	readings, rejected, success, failed *prometheus.Desc
	lag                                 *prometheus.Desc
}

// NewIngestCollector returns a collector of the ingest state health reports (the
// scheduler's Health method): readings ingested and rows rejected by reason (counters since
// start), and the last success, last error and lag per provider (gauges).
func NewIngestCollector(component string, health func() []ProviderIngest) prometheus.Collector {
	cl := prometheus.Labels{"component": component}
	return &ingestCollector{
		health:   health,
		readings: prometheus.NewDesc(MetricIngestReadings, "Readings ingested, by provider.", []string{"provider", "mode"}, cl),
		rejected: prometheus.NewDesc(MetricIngestRejected, "Rows or values rejected at ingest, by provider and reason.", []string{"provider", "reason"}, cl),
		success:  prometheus.NewDesc(MetricIngestLastSuccess, "Unix time of the provider's last successful ingest.", []string{"provider"}, cl),
		failed:   prometheus.NewDesc(MetricIngestLastError, "Unix time of the provider's last failed ingest.", []string{"provider"}, cl),
		lag:      prometheus.NewDesc(MetricIngestLag, "Age in seconds of the newest reading ingested from the provider.", []string{"provider"}, cl),
	}
}

// Describe implements prometheus.Collector.
func (c *ingestCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.readings, c.rejected, c.success, c.failed, c.lag} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ingestCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.health() {
		ch <- c.metric(c.readings, prometheus.CounterValue, float64(h.RowsIngested), h.Slug, h.Mode)
		for reason, n := range h.RowsRejected {
			ch <- c.metric(c.rejected, prometheus.CounterValue, float64(n), h.Slug, reason)
		}
		if !h.LastSuccess.IsZero() {
			ch <- c.metric(c.success, prometheus.GaugeValue, float64(h.LastSuccess.UnixNano())/1e9, h.Slug)
		}
		if !h.LastError.IsZero() {
			ch <- c.metric(c.failed, prometheus.GaugeValue, float64(h.LastError.UnixNano())/1e9, h.Slug)
		}
		if h.LagSeconds != nil {
			ch <- c.metric(c.lag, prometheus.GaugeValue, *h.LagSeconds, h.Slug)
		}
	}
}

// metric builds one sample; a bad one is reported to the scrape instead of panicking.
func (c *ingestCollector) metric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
