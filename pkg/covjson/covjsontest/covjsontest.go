// Package covjsontest validates documents against the CoverageJSON JSON schema of the
// covjson-validator project (github.com/covjson/covjson-validator, BSD 3-Clause, its
// LICENSE beside the schema in schema/), for tests of anything that writes CoverageJSON:
// the schema is the independent reading of the specification, not ours.
package covjsontest

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaCommit is the covjson-validator commit the schema files were taken from.
const SchemaCommit = "131739682ed3aa77d553d4d5c1bfa8c91c212199"

//go:embed schema/*.json schema/LICENSE
var files embed.FS

// base is where the schemas' root-relative $ids ("/schemas/coverage") resolve.
const base = "https://covjson.org"

var (
	once     sync.Once
	compiled *jsonschema.Schema
	loadErr  error
)

func load() (*jsonschema.Schema, error) {
	once.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		entries, err := fs.ReadDir(files, "schema")
		if err != nil {
			loadErr = err
			return
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			b, err := files.ReadFile(path.Join("schema", e.Name()))
			if err != nil {
				loadErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				loadErr = fmt.Errorf("schema %s: %w", e.Name(), err)
				return
			}
			if err := c.AddResource(base+"/schemas/"+strings.TrimSuffix(e.Name(), ".json"), doc); err != nil {
				loadErr = fmt.Errorf("schema %s: %w", e.Name(), err)
				return
			}
		}
		compiled, loadErr = c.Compile(base + "/schemas/coveragejson")
	})
	return compiled, loadErr
}

// Validate reports whether doc is a valid CoverageJSON document (any of its top-level
// types), with the schema's own explanation when it is not.
func Validate(doc []byte) error {
	s, err := load()
	if err != nil {
		return fmt.Errorf("load the CoverageJSON schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return err
	}
	// The schema lets a type it does not know pass; a CoverageJSON answer has one it knows.
	var top struct{ Type string }
	if err := json.Unmarshal(doc, &top); err != nil || top.Type == "" {
		return fmt.Errorf("no type member")
	}
	return nil
}
