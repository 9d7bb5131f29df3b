// Package providerdata finds the recorded real provider payloads (../shared/data/providers
// next to the checkout) that the adapter and service tests use as inputs.
package providerdata

import (
	"os"
	"path/filepath"
)

// EnvDir overrides where the recorded provider payloads are.
const EnvDir = "SENSORGATE_PROVIDER_DATA"

// Dir returns the providers folder: $SENSORGATE_PROVIDER_DATA, or the first
// shared/data/providers found walking up from the working directory; "" when absent, so
// that tests can skip saying why.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		return ""
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		c := filepath.Join(dir, "shared", "data", "providers")
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
