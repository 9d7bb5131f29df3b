package api

import (
	"bytes"
	"encoding/json"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// minimalJSON is docs/spec.md 2.1's minimal view, exactly.
type minimalJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Latitude   *float64 `json:"latitude"`
	Longitude  *float64 `json:"longitude"`
	SensorType string   `json:"sensor_type"`
}

// field is one property a projected item may carry.
type field struct {
	name string
	get  func(s *catalog.Sensor) any
	// optional fields are left out of an item when get returns nil.
	optional bool
}

var (
	fID         = field{name: "id", get: func(s *catalog.Sensor) any { return s.ID.String() }}
	fExternalID = field{name: "external_id", get: func(s *catalog.Sensor) any { return s.ExternalID }}
	fName       = field{name: "name", get: func(s *catalog.Sensor) any { return s.Name }}
	fDesc       = field{name: "description", get: func(s *catalog.Sensor) any { return s.Description }}
	fType       = field{name: "sensor_type", get: func(s *catalog.Sensor) any { return s.SensorType }}
	fStatus     = field{name: "status", get: func(s *catalog.Sensor) any { return s.Status }}
	fDataTypes  = field{name: "data_types", get: func(s *catalog.Sensor) any { return s.DataTypesOrEmpty() }}
	fDeploy     = field{name: "deployment_date", get: func(s *catalog.Sensor) any { return catalog.DateOnly(s.DeploymentDate) }}
	fDecom      = field{name: "decommissioned_date", get: func(s *catalog.Sensor) any { return catalog.DateOnly(s.DecommissionedDate) }}
	fLat        = field{name: "latitude", get: func(s *catalog.Sensor) any { return s.Latitude }}
	fLon        = field{name: "longitude", get: func(s *catalog.Sensor) any { return s.Longitude }}
	fProvID     = field{name: "provider_id", get: func(s *catalog.Sensor) any { return catalog.IDString(s.ProviderID) }}
	fProvName   = field{name: "provider_name", get: func(s *catalog.Sensor) any { return s.ProviderName }}
	fProvSlug   = field{name: "provider_slug", get: func(s *catalog.Sensor) any { return s.ProviderSlug }}
	fFeedID     = field{name: "feed_id", get: func(s *catalog.Sensor) any { return catalog.IDString(s.FeedID) }}
	fFeedName   = field{name: "feed_name", get: func(s *catalog.Sensor) any { return s.FeedName }}
	fService    = field{name: "connected_service", get: func(s *catalog.Sensor) any { return s.ServiceID }}
	fDistance   = field{name: "distance_km", optional: true, get: func(s *catalog.Sensor) any {
		if s.DistanceKM == nil {
			return nil
		}
		return *catalog.RoundKM(s.DistanceKM)
	}}
)

// A view is the field set of one kind of list item, in output order.
type view []field

var (
	fullView     = view{fID, fExternalID, fName, fDesc, fType, fStatus, fDataTypes, fDeploy, fDecom, fLat, fLon, fProvID, fProvName, fProvSlug, fFeedID, fFeedName, fService, fDistance}
	registryView = view{fID, fExternalID, fName, fType, fStatus, fDataTypes, fProvSlug, fFeedID, fService, fLat, fLon, fDistance}
)

// project keeps the fields of v named in names, in the view's order. No known name means no
// projection (nil), so that fields=typo returns whole items rather than empty objects.
func (v view) project(names []string) view {
	if len(names) == 0 {
		return nil
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out view
	for _, f := range v {
		if want[f.name] {
			out = append(out, f)
		}
	}
	return out
}

// projected is one item reduced to a view; it marshals as an object in the view's order.
type projected struct {
	v view
	s *catalog.Sensor
}

func (p projected) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, f := range p.v {
		val := f.get(p.s)
		if f.optional && val == nil {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(f.name)
		b.Write(k)
		b.WriteByte(':')
		enc, err := json.Marshal(val)
		if err != nil {
			return nil, err
		}
		b.Write(enc)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// shapeItems renders sensors as the list items the query asks for: minimal wins over
// fields (docs/spec.md 4.2 rule 2), fields over the default view.
func shapeItems(sensors []catalog.Sensor, q sensorquery.Query, registry bool) any {
	base := fullView
	if registry {
		base = registryView
	}
	if q.Minimal {
		// The map view of large pages: a struct encodes several times faster than the
		// generic projection.
		out := make([]minimalJSON, len(sensors))
		for i := range sensors {
			s := &sensors[i]
			out[i] = minimalJSON{ID: s.ID.String(), Name: s.Name, Latitude: s.Latitude, Longitude: s.Longitude, SensorType: s.SensorType}
		}
		return out
	}
	v := base.project(q.Fields)
	if v != nil {
		out := make([]projected, len(sensors))
		for i := range sensors {
			out[i] = projected{v: v, s: &sensors[i]}
		}
		return out
	}
	if registry {
		out := make([]catalog.RegistryRecord, len(sensors))
		for i := range sensors {
			out[i] = sensors[i].Registry()
		}
		return out
	}
	out := make([]catalog.SensorRecord, len(sensors))
	for i := range sensors {
		out[i] = sensors[i].Record()
	}
	return out
}

// sensorList is the envelope of the sensor lists (docs/spec.md 4.2): it never changes with
// minimal or fields.
type sensorList struct {
	Sensors    any                 `json:"sensors"`
	Pagination contract.Pagination `json:"pagination"`
}

type projectList struct {
	Projects   []catalog.ProjectRecord `json:"projects"`
	Pagination contract.Pagination     `json:"pagination"`
}

// serviceMetaJSON is /services/:id: the record plus what the service said about itself.
type serviceMetaJSON struct {
	catalog.ServiceRecord
	Version      string                `json:"version"`
	Providers    []catalog.ProviderRef `json:"providers"`
	Feeds        []string              `json:"feeds"`
	Tools        []string              `json:"tools"`
	SensorCount  int                   `json:"sensor_count"`
	LastIngestAt *contract.Time        `json:"last_ingest_at"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
