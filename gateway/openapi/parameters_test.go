package openapi_test

import (
	"slices"
	"testing"

	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// TestParameterEnumIsTheRegistry keeps the document's ParameterID enum equal to the
// canonical parameters registry (pkg/canon), which the gateway's data_types filter and the
// MCP tools read: a parameter added to one and not the other fails here.
func TestParameterEnumIsTheRegistry(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := doc.Components.Schemas["ParameterID"]
	if !ok || ref.Value == nil {
		t.Fatal("no ParameterID schema")
	}
	var enum []string
	for _, v := range ref.Value.Enum {
		s, _ := v.(string)
		enum = append(enum, s)
	}
	var ids []string
	for _, p := range canon.Parameters() {
		ids = append(ids, p.ID)
	}
	slices.Sort(enum)
	if !slices.Equal(enum, ids) {
		t.Fatalf("ParameterID enum %v\nregistry          %v", enum, ids)
	}
}
