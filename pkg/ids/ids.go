// Package ids computes the stable identities of docs/design.md: sensor ids are UUIDv5 of
// (service id, external id) and reading ids UUIDv5 of (sensor id, timestamp), so the
// gateway and every service derive the same id without asking each other.
package ids

import (
	"time"

	"github.com/google/uuid"
)

// Namespace is the UUIDv5 namespace of every sensorgate id. Changing it changes every id.
var Namespace = uuid.MustParse("6f1d2c3b-8a4e-5b7f-9c0d-1e2f3a4b5c6d")

// Sensor returns the id of the sensor that service serviceID knows as externalID.
// External ids are byte-exact: OpenAQ's "21 de Mayo" and "21 de mayo" are two sensors.
// Each adapter spells its provider's ids one way (NDBC upper-case, so activestations.xml's
// "tplm2" and the file TPLM2.txt are one station) before an id gets here.
func Sensor(serviceID, externalID string) uuid.UUID {
	return uuid.NewSHA1(Namespace, []byte("sensor:"+serviceID+":"+externalID))
}

// Reading returns the id of the reading of sensor taken at ts (truncated to milliseconds).
func Reading(sensor uuid.UUID, ts time.Time) uuid.UUID {
	return uuid.NewSHA1(Namespace, []byte("reading:"+sensor.String()+":"+ts.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)))
}

// Provider returns the id of the provider with the given slug.
func Provider(slug string) uuid.UUID {
	return uuid.NewSHA1(Namespace, []byte("provider:"+slug))
}

// Feed returns the id of the feed (project) with the given slug.
func Feed(slug string) uuid.UUID {
	return uuid.NewSHA1(Namespace, []byte("feed:"+slug))
}
