// Package alerts holds the gateway's alert rules (threshold and staleness conditions over
// sensors, per API key), their evaluation on every stored reading of the services' live
// logs, the events they raise and the signed webhooks (Standard Webhooks) that deliver
// them from an outbox (docs/alerts.md).
package alerts

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/freshness"
)

// Conditions.
const (
	OpAbove   = "above"
	OpBelow   = "below"
	OpOutside = "outside"
	OpStale   = "stale"
)

// States of an event (and of a rule over one sensor).
const (
	StateFiring   = "firing"
	StateResolved = "resolved"
	// statePending: the condition holds but not yet for the rule's duration.
	statePending = "pending"
	// stateOK: the condition does not hold (never reported as an event).
	stateOK = "ok"
)

// DefaultHysteresis is the fraction of the threshold (of max-min for outside) by which a
// value must come back inside before a firing rule resolves, when the rule gives no
// hysteresis of its own: a value dancing around the threshold does not flap.
const DefaultHysteresis = 0.05

// MaxSensorIDs bounds a target's sensor list.
const MaxSensorIDs = 1000

// MaxFor bounds a rule's for: a condition that must hold longer than a week is not an
// alert, and the services keep far less of their logs than that.
const MaxFor = 7 * 24 * time.Hour

// Target says which sensors a rule watches: exactly one of its fields is set.
type Target struct {
	SensorIDs []string `json:"sensor_ids,omitempty"`
	BBox      *BBox    `json:"bbox,omitempty"`
	Near      *Near    `json:"near,omitempty"`
	ProjectID string   `json:"project_id,omitempty"`
}

// BBox is a latitude/longitude box.
type BBox struct {
	MinLat float64 `json:"min_lat"`
	MinLon float64 `json:"min_lon"`
	MaxLat float64 `json:"max_lat"`
	MaxLon float64 `json:"max_lon"`
}

// Near is a circle around a point.
type Near struct {
	Lat      float64 `json:"lat"`
	Lon      float64 `json:"lon"`
	RadiusKM float64 `json:"radius_km"`
}

// Condition is what makes a rule fire: a parameter above, below or outside a range, or no
// reading by the one freshness rule (stale).
type Condition struct {
	Parameter string   `json:"parameter,omitempty"`
	Op        string   `json:"op"`
	Value     *float64 `json:"value,omitempty"`
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
	// Hysteresis is how far (in the parameter's unit) a value must come back before a
	// firing rule resolves; nil: DefaultHysteresis of the threshold.
	Hysteresis *float64 `json:"hysteresis,omitempty"`
}

// Rule is an alert rule as stored and shown.
type Rule struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Target     Target    `json:"target"`
	Condition  Condition `json:"condition"`
	For        string    `json:"for"`
	WebhookURL string    `json:"webhook_url,omitempty"`
	// WebhookDisabled is set when the receiver answered 410 Gone: no more deliveries.
	WebhookDisabled *time.Time `json:"webhook_disabled_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`

	keyID  string
	forDur time.Duration
	secret string
}

// Event is one transition of a rule over one sensor.
type Event struct {
	ID               string    `json:"id"`
	RuleID           string    `json:"rule_id"`
	SensorID         string    `json:"sensor_id"`
	State            string    `json:"state"`
	Parameter        string    `json:"parameter"`
	Value            *float64  `json:"value"`
	ReadingTimestamp time.Time `json:"reading_timestamp"`
	Timestamp        time.Time `json:"timestamp"`
}

// CreateRequest is the body of POST /api/v1/alerts/rules.
type CreateRequest struct {
	Name       string    `json:"name"`
	Target     Target    `json:"target"`
	Condition  Condition `json:"condition"`
	For        string    `json:"for"`
	WebhookURL string    `json:"webhook_url"`
}

// validate checks the form of r and returns the rule it describes (without id, key or
// secret), or an error naming the field at fault. Whether its sensors and project exist
// is for Handlers.Create to find out (resolveTarget).
func (r CreateRequest) validate() (Rule, error) {
	name := strings.TrimSpace(r.Name)
	if name == "" || len(name) > 200 {
		return Rule{}, apierr.Invalid("name", "want 1 to 200 characters")
	}
	if err := r.Target.validate(); err != nil {
		return Rule{}, err
	}
	if err := r.Condition.validate(); err != nil {
		return Rule{}, err
	}
	if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(r.For)), "P") {
		return Rule{}, apierr.Invalid("for", "want an ISO 8601 duration such as PT0S, PT15M or P1D")
	}
	d, err := freshness.ParseMaxAge(r.For)
	if err != nil {
		return Rule{}, apierr.Invalid("for", "want an ISO 8601 duration such as PT0S, PT15M or P1D (%v)", err)
	}
	if d > MaxFor {
		return Rule{}, apierr.Invalid("for", "%q is more than P7D; want at most P7D", clip(r.For))
	}
	return Rule{Name: name, Target: r.Target, Condition: r.Condition, For: strings.ToUpper(strings.TrimSpace(r.For)),
		WebhookURL: strings.TrimSpace(r.WebhookURL), forDur: d}, nil
}

func (t Target) validate() error {
	n := 0
	if len(t.SensorIDs) > 0 {
		n++
	}
	if t.BBox != nil {
		n++
	}
	if t.Near != nil {
		n++
	}
	if t.ProjectID != "" {
		n++
	}
	if n != 1 {
		return apierr.Invalid("target", "want exactly one of sensor_ids, bbox, near or project_id")
	}
	switch {
	case len(t.SensorIDs) > 0:
		if len(t.SensorIDs) > MaxSensorIDs {
			return apierr.Invalid("target.sensor_ids", "at most %d sensors", MaxSensorIDs)
		}
		for i, id := range t.SensorIDs {
			if strings.TrimSpace(id) == "" {
				return apierr.Invalid("target.sensor_ids", "item %d is empty; want a sensor UUID or a provider's external id", i)
			}
		}
	case t.BBox != nil:
		b := t.BBox
		if !lat(b.MinLat) || !lat(b.MaxLat) || !lon(b.MinLon) || !lon(b.MaxLon) || b.MinLat > b.MaxLat || b.MinLon > b.MaxLon {
			return apierr.Invalid("target.bbox", "want min_lat <= max_lat in [-90, 90] and min_lon <= max_lon in [-180, 180]")
		}
	case t.Near != nil:
		if !lat(t.Near.Lat) || !lon(t.Near.Lon) {
			return apierr.Invalid("target.near", "want lat in [-90, 90] and lon in [-180, 180]")
		}
		if !(t.Near.RadiusKM > 0 && t.Near.RadiusKM <= 500) {
			return apierr.Invalid("target.near.radius_km", "want a radius above 0 and at most 500 km")
		}
	default:
		if strings.TrimSpace(t.ProjectID) == "" {
			return apierr.Invalid("target.project_id", "want a project's UUID or slug")
		}
	}
	return nil
}

func (c Condition) validate() error {
	finite := func(p *float64) bool { return p != nil && !math.IsNaN(*p) && !math.IsInf(*p, 0) }
	switch c.Op {
	case OpAbove, OpBelow:
		if !finite(c.Value) {
			return apierr.Invalid("condition.value", "want a number for op %q", c.Op)
		}
	case OpOutside:
		if !finite(c.Min) || !finite(c.Max) || *c.Min >= *c.Max {
			return apierr.Invalid("condition.min", "want numbers min < max for op \"outside\"")
		}
	case OpStale:
		if c.Parameter != "" || c.Value != nil || c.Min != nil || c.Max != nil {
			return apierr.Invalid("condition", "op \"stale\" takes no parameter, value, min or max")
		}
		return nil
	default:
		return apierr.Invalid("condition.op", "want one of above, below, outside, stale")
	}
	if c.Parameter == "" {
		return apierr.Invalid("condition.parameter", "want the canonical parameter id the condition compares (e.g. %s)", canon.PM25)
	}
	if !canon.IsParameter(c.Parameter) {
		// A parameter no reading carries would never fire: refused, with where to look.
		return apierr.Invalid("condition.parameter", "%q is not a canonical parameter id (e.g. %s; the OpenAPI schema ParameterID and the MCP tool describe_catalog list them)", clip(c.Parameter), canon.PM25)
	}
	if c.Hysteresis != nil && (!finite(c.Hysteresis) || *c.Hysteresis < 0) {
		return apierr.Invalid("condition.hysteresis", "want a number >= 0")
	}
	return nil
}

// breached says whether v breaks the condition; clear whether v is back inside by the
// hysteresis margin (a firing rule resolves only when clear).
func (c Condition) breached(v float64) bool {
	switch c.Op {
	case OpAbove:
		return v > *c.Value
	case OpBelow:
		return v < *c.Value
	case OpOutside:
		return v < *c.Min || v > *c.Max
	}
	return false
}

func (c Condition) clear(v float64) bool {
	h := c.margin()
	switch c.Op {
	case OpAbove:
		return v <= *c.Value-h
	case OpBelow:
		return v >= *c.Value+h
	case OpOutside:
		return v >= *c.Min+h && v <= *c.Max-h
	}
	return true
}

func (c Condition) margin() float64 {
	if c.Hysteresis != nil {
		return *c.Hysteresis
	}
	if c.Op == OpOutside {
		return DefaultHysteresis * (*c.Max - *c.Min) / 2
	}
	return DefaultHysteresis * math.Abs(*c.Value)
}

func lat(v float64) bool { return v >= -90 && v <= 90 }
func lon(v float64) bool { return v >= -180 && v <= 180 }

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("alerts: encode %T: %w", v, err)
	}
	return string(b), nil
}
