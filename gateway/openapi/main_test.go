package openapi_test

import (
	"os"
	"testing"
)

// TestMain removes the binaries the process-level tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	binaries.Remove()
	os.Exit(code)
}
