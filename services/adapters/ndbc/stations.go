package ndbc

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// Sensor types of NDBC stations.
const (
	SensorTypeBuoy     = "buoy"
	SensorTypeFixed    = "fixed_station" // C-MAN and other coastal/land stations
	SensorTypePlatform = "platform"      // oil rigs
	SensorTypeUSV      = "usv"           // uncrewed surface vehicles
	SensorTypeOther    = "other"
)

// xmlStation is one <station/> of activestations.xml.
type xmlStation struct {
	ID           string `xml:"id,attr"`
	Lat          string `xml:"lat,attr"`
	Lon          string `xml:"lon,attr"`
	Elev         string `xml:"elev,attr"`
	Name         string `xml:"name,attr"`
	Owner        string `xml:"owner,attr"`
	Program      string `xml:"pgm,attr"`
	Type         string `xml:"type,attr"`
	Met          string `xml:"met,attr"`
	Currents     string `xml:"currents,attr"`
	WaterQuality string `xml:"waterquality,attr"`
	DART         string `xml:"dart,attr"`
}

// ParseActiveStations reads activestations.xml into station records (Batch.Stations, no
// observations). Ids are upper-cased; NDBC's type becomes the sensor_type (buoy, tao and
// dart are all moored buoys; fixed is a C-MAN/coastal station); the met flag decides the
// data types. A station without an id or with an unusable position is a rejection.
func ParseActiveStations(data []byte) (observation.Batch, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	out := observation.Batch{Provider: ProviderSlug}
	sawRoot := false
	n := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !sawRoot {
				return observation.Batch{}, fmt.Errorf("ndbc: activestations: not XML: %w", err)
			}
			out.Rejections = append(out.Rejections, observation.Rejection{Line: n, Reason: batch.ReasonMalformedRow, Detail: fmt.Sprintf("XML stops being readable after station %d: %v", n, err)})
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "stations":
			sawRoot = true
			continue
		case "station":
		default:
			continue
		}
		if !sawRoot {
			return observation.Batch{}, fmt.Errorf("ndbc: activestations: <station> outside <stations>")
		}
		n++
		var xs xmlStation
		if err := dec.DecodeElement(&xs, &se); err != nil {
			out.Rejections = append(out.Rejections, observation.Rejection{Line: n, Reason: batch.ReasonBadStationMetadata, Detail: err.Error()})
			continue
		}
		st, rej := stationFromXML(xs, n)
		if rej != nil {
			out.Rejections = append(out.Rejections, *rej)
			continue
		}
		out.Stations = append(out.Stations, st)
	}
	if !sawRoot {
		return observation.Batch{}, fmt.Errorf("ndbc: activestations: no <stations> element")
	}
	return out, nil
}

func stationFromXML(xs xmlStation, n int) (contract.Station, *observation.Rejection) {
	id := CanonicalID(xs.ID)
	if err := contract.ValidExternalID(id); err != nil {
		return contract.Station{}, &observation.Rejection{Line: n, Field: "id", Reason: batch.ReasonMissingStation, Detail: fmt.Sprintf("station id %q: %v", batch.Truncate(xs.ID, 40), err)}
	}
	st := stationFromID(id)
	if name := strings.TrimSpace(xs.Name); name != "" {
		st.Name = name
	}
	var desc []string
	for _, s := range []string{xs.Owner, xs.Program} {
		if s = strings.TrimSpace(s); s != "" {
			desc = append(desc, s)
		}
	}
	if t := strings.TrimSpace(xs.Type); t != "" {
		desc = append(desc, "NDBC type "+t)
	}
	var measures []string
	for _, f := range []struct{ flag, what string }{{xs.Met, "meteorology"}, {xs.Currents, "currents"}, {xs.WaterQuality, "water quality"}, {xs.DART, "tsunami (DART)"}} {
		if flag(f.flag) {
			measures = append(measures, f.what)
		}
	}
	if len(measures) > 0 {
		desc = append(desc, "measures "+strings.Join(measures, ", "))
	}
	if e := strings.TrimSpace(xs.Elev); e != "" {
		desc = append(desc, "elevation "+e+" m")
	}
	st.Description = strings.Join(desc, "; ")
	buoyLike := false
	switch strings.ToLower(strings.TrimSpace(xs.Type)) {
	case "buoy", "tao", "dart":
		st.SensorType, buoyLike = SensorTypeBuoy, true
		st.ReportingIntervalS = 600
		if xs.Type != "buoy" {
			st.ReportingIntervalS = 3600
		}
	case "fixed":
		st.SensorType, st.ReportingIntervalS = SensorTypeFixed, 3600
	case "oilrig":
		st.SensorType, st.ReportingIntervalS = SensorTypePlatform, 3600
	case "usv":
		st.SensorType, st.ReportingIntervalS = SensorTypeUSV, 600
	case "":
	default:
		// "other" holds NDBC's own weather buoys too (41002 is listed so): an all-digit
		// id is a moored buoy, as in stationFromID.
		if batch.IsDigits(id) {
			buoyLike = true
			break
		}
		st.SensorType, st.ReportingIntervalS = SensorTypeOther, 3600
	}
	if flag(xs.Met) {
		st.DataTypes = []string{canon.WindDirectionDeg, canon.WindSpeedMS, canon.AirPressureHPa, canon.AirTemperatureC, canon.WaterTemperatureC}
		if buoyLike {
			st.DataTypes = append(st.DataTypes, canon.WaveHeightM)
		}
		st.DataTypes = batch.MergeTypes(st.DataTypes, nil)
	} else {
		st.DataTypes = []string{}
	}
	lat, e1 := strconv.ParseFloat(strings.TrimSpace(xs.Lat), 64)
	lon, e2 := strconv.ParseFloat(strings.TrimSpace(xs.Lon), 64)
	if e1 != nil || e2 != nil {
		return contract.Station{}, &observation.Rejection{StationID: id, Line: n, Field: "lat/lon", Reason: batch.ReasonBadCoordinates, Detail: fmt.Sprintf("position %q %q is not numeric", batch.Truncate(xs.Lat, 20), batch.Truncate(xs.Lon, 20))}
	}
	la, lo, ok := batch.Coord(lat, lon)
	if !ok {
		return contract.Station{}, &observation.Rejection{StationID: id, Line: n, Field: "lat/lon", Reason: batch.ReasonBadCoordinates, Detail: fmt.Sprintf("position %v %v is out of range", lat, lon)}
	}
	st.Latitude, st.Longitude = la, lo
	return st, nil
}

func flag(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "y") }
