package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// SensorLookup is the part of Store that resolves a sensor reference.
type SensorLookup interface {
	Sensor(ctx context.Context, id uuid.UUID) (Sensor, error)
	SensorByExternalID(ctx context.Context, externalID string) (Sensor, error)
}

// IsSensorUUID reports whether ref is a sensor UUID in the canonical dashed form that
// docs/spec.md 4 names (36 characters); other spellings uuid.Parse accepts are taken as
// external ids.
func IsSensorUUID(ref string) (uuid.UUID, bool) {
	if len(ref) != 36 {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(ref)
	return id, err == nil
}

// ResolveSensor finds the sensor a path :id names: its UUID (with dashes) or its provider's
// external id. A UUID that names no sensor is tried as an external id too, since a provider
// may use UUIDs. Errors are *apierr.Error (400 invalid_parameter for an id that cannot be
// an external id, 404 sensor_not_found) or a wrapped store error.
func ResolveSensor(ctx context.Context, s SensorLookup, ref string) (Sensor, error) {
	if id, ok := IsSensorUUID(ref); ok {
		sn, err := s.Sensor(ctx, id)
		if err == nil {
			return sn, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return sn, fmt.Errorf("resolve sensor %s: %w", id, err)
		}
	}
	if err := contract.ValidExternalID(ref); err != nil {
		return Sensor{}, apierr.Invalid("id", "want a sensor UUID or a provider's external id: %v", err)
	}
	sn, err := s.SensorByExternalID(ctx, ref)
	if errors.Is(err, ErrNotFound) {
		return sn, apierr.New(apierr.SensorNotFound, "sensor %q not found", ref)
	}
	if err != nil {
		return sn, fmt.Errorf("resolve sensor %q: %w", ref, err)
	}
	return sn, nil
}
