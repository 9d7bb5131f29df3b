// Package providerdata finds the recorded real provider payloads (testdata/providers at the
// repository root, with their SOURCES.md) that the adapter and service tests use as inputs.
package providerdata

import (
	"os"
	"path/filepath"
)

// NotIngested lists the files of the recorded set that no service ingests in files mode,
// each with the reason; every other file must be claimed by exactly one provider of one
// service (a test walks the folder and fails on a file that is neither). Sidecars
// ("<file>.station", see ingest.SidecarSuffix) are read with their document and are not
// listed here.
var NotIngested = map[string]string{
	"SOURCES.md": "provenance of the recorded payloads (documentation, not provider data)",
}

// SidecarSuffix is the suffix of a recorded document's station sidecar.
const SidecarSuffix = ".station"

// EnvDir overrides where the recorded provider payloads are.
const EnvDir = "SENSORGATE_PROVIDER_DATA"

// Dir returns the providers folder: $SENSORGATE_PROVIDER_DATA, or the repository's
// testdata/providers found walking up from the working directory (a test runs in its
// package's folder); "" when absent, so that a caller can fail saying why.
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
		c := filepath.Join(dir, "testdata", "providers")
		if fi, err := os.Stat(filepath.Join(c, "SOURCES.md")); err == nil && !fi.IsDir() {
			return c
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
