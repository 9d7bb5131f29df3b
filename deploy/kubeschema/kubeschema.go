// Package kubeschema makes kubeconform's "standalone-strict" JSON schemas of Kubernetes
// kinds from the OpenAPI (swagger 2.0) document that the k8s.io/kubernetes Go module
// ships in api/openapi-spec/swagger.json, so the manifests of deploy/k8s are validated
// against the API of a pinned Kubernetes release without fetching anything at run time
// but that module from the Go module proxy (docs/deploy.md, "Tests").
//
// The module is only downloaded (`go mod download`), never imported: its go.mod replaces
// every k8s.io staging module with a local path, which breaks any module importing it.
//
// The schemas are what kubeconform's own published ones are (its openapi2jsonschema with
// --kubernetes --expanded --stand-alone --strict), made in Go:
//   - every $ref inlined (standalone: one self-contained file per kind);
//   - additionalProperties false on every object schema that lists properties (strict: a
//     misspelt field is an error, as with kubectl's and the API server's strict field
//     validation);
//   - IntOrString as string or integer, Quantity as string or number (the swagger
//     document types both as strings, but the API server takes `port: 8080`, `cpu: 1`);
//   - optional properties may be null (the API server reads null as unset);
//   - apiVersion and kind restricted to the kind's own.
//
// File names follow kubeconform's template {{ .ResourceKind }}{{ .KindSuffix }}.json:
// deployment-apps-v1.json, service-v1.json, ingress-networking-v1.json.
package kubeschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Module is the Go module whose api/openapi-spec holds the Kubernetes OpenAPI documents.
const Module = "k8s.io/kubernetes"

// PathTemplate is the kubeconform schema location, relative to a directory written by
// Write: kubeconform fills in the lower-case kind and its group/version suffix.
const PathTemplate = "{{ .ResourceKind }}{{ .KindSuffix }}.json"

// Release is one pinned Kubernetes release: its module version and the module's h1: hash
// (as `go mod download -json` prints it), so the spec cannot change under the same version.
type Release struct {
	Version string // module version, e.g. v1.37.2
	Sum     string // go.sum hash of the module zip
}

// Download fetches the module of r through the Go module proxy (a no-op when it is in the
// module cache already), checks its hash and returns the path of its swagger.json.
func Download(ctx context.Context, r Release) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("kubeschema: the go command is needed to download %s: %w", Module, err)
	}
	cmd := exec.CommandContext(ctx, gobin, "mod", "download", "-json", Module+"@"+r.Version)
	// Outside any module or workspace: `go mod download mod@version` then neither reads
	// nor changes a go.mod, and GOFLAGS such as -mod=vendor cannot get in the way.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || err != nil {
		return "", fmt.Errorf("kubeschema: go mod download %s@%s: %v %s %s", Module, r.Version, err, info.Error, strings.TrimSpace(stderr.String()))
	}
	if r.Sum != "" && info.Sum != r.Sum {
		return "", fmt.Errorf("kubeschema: %s@%s has hash %s, pinned %s", Module, r.Version, info.Sum, r.Sum)
	}
	spec := filepath.Join(info.Dir, "api", "openapi-spec", "swagger.json")
	if _, err := os.Stat(spec); err != nil {
		return "", fmt.Errorf("kubeschema: %s@%s has no swagger document: %w", Module, r.Version, err)
	}
	return spec, nil
}

// Spec is a loaded swagger document: its definitions and, for each apiVersion/kind, the
// definition of that kind.
type Spec struct {
	defs  map[string]map[string]any
	kinds map[string]string // "apps/v1 Deployment" -> io.k8s.api.apps.v1.Deployment
}

// Load reads a Kubernetes swagger.json.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeschema: %w", err)
	}
	var doc struct {
		Swagger     string                    `json:"swagger"`
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("kubeschema: %s: %w", path, err)
	}
	if doc.Swagger != "2.0" || len(doc.Definitions) == 0 {
		return nil, fmt.Errorf("kubeschema: %s is not a swagger 2.0 document with definitions", path)
	}
	s := &Spec{defs: doc.Definitions, kinds: map[string]string{}}
	for name, def := range doc.Definitions {
		gvks, _ := def["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			group, _ := m["group"].(string)
			version, _ := m["version"].(string)
			kind, _ := m["kind"].(string)
			// Only the type of the kind itself (io.k8s.api.apps.v1.Deployment), not the
			// shared types carrying every group's GVK (DeleteOptions, WatchEvent).
			if strings.HasSuffix(name, "."+kind) && strings.Contains(name, "."+version+".") {
				s.kinds[APIVersion(group, version)+" "+kind] = name
			}
		}
	}
	return s, nil
}

// APIVersion joins a group and version as manifests write them ("v1" for the core group).
func APIVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// FileName is the file kubeconform looks for, for PathTemplate: the lower-case kind, the
// first label of the group (none for the core group) and the version.
func FileName(apiVersion, kind string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return strings.ToLower(kind) + "-" + strings.ToLower(apiVersion) + ".json"
	}
	first, _, _ := strings.Cut(group, ".")
	return strings.ToLower(kind) + "-" + strings.ToLower(first) + "-" + strings.ToLower(version) + ".json"
}

// The two types the swagger document declares as plain strings that the API server also
// takes as numbers.
const (
	intOrString = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	quantity    = "io.k8s.apimachinery.pkg.api.resource.Quantity"
)

// Schema returns the standalone-strict schema of one kind.
func (s *Spec) Schema(apiVersion, kind string) (map[string]any, error) {
	name, ok := s.kinds[apiVersion+" "+kind]
	if !ok {
		return nil, fmt.Errorf("kubeschema: no kind %s %s in this Kubernetes release", apiVersion, kind)
	}
	out, err := s.expand(map[string]any{"$ref": "#/definitions/" + name}, nil)
	if err != nil {
		return nil, fmt.Errorf("kubeschema: %s %s: %w", apiVersion, kind, err)
	}
	props, _ := out["properties"].(map[string]any)
	if props == nil {
		return nil, fmt.Errorf("kubeschema: %s %s has no properties", apiVersion, kind)
	}
	for field, value := range map[string]string{"apiVersion": apiVersion, "kind": kind} {
		p, _ := props[field].(map[string]any)
		if p == nil {
			return nil, fmt.Errorf("kubeschema: %s %s has no %s property", apiVersion, kind, field)
		}
		p["enum"] = []any{value}
	}
	out["$schema"] = "http://json-schema.org/draft-04/schema#"
	out["additionalProperties"] = false
	return out, nil
}

// expand returns a copy of node with every $ref inlined, descriptions and x-kubernetes
// extensions dropped, objects with properties closed and optional properties nullable.
// stack holds the definitions being expanded, to refuse a recursive type.
func (s *Spec) expand(node map[string]any, stack []string) (map[string]any, error) {
	if ref, ok := node["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/definitions/")
		if !ok {
			return nil, fmt.Errorf("reference %q outside the document", ref)
		}
		switch name {
		case intOrString:
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}, nil
		case quantity:
			return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}, nil
		}
		if slices.Contains(stack, name) {
			return nil, fmt.Errorf("recursive type %s (via %s)", name, strings.Join(stack, " > "))
		}
		def, ok := s.defs[name]
		if !ok {
			return nil, fmt.Errorf("reference to missing definition %s", name)
		}
		return s.expand(def, append(stack, name))
	}
	if f, _ := node["format"].(string); f == "int-or-string" {
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}, nil
	}
	out := map[string]any{}
	for k, v := range node {
		if k == "description" || strings.HasPrefix(k, "x-") {
			continue
		}
		var err error
		switch k {
		case "properties":
			out[k], err = s.expandProperties(v, node["required"], stack)
		case "items":
			out[k], err = s.expandAny(v, stack)
		case "additionalProperties":
			if m, ok := v.(map[string]any); ok {
				out[k], err = s.expand(m, stack)
			} else {
				out[k] = v
			}
		case "allOf", "anyOf", "oneOf":
			list, _ := v.([]any)
			var l []any
			for _, e := range list {
				x, xerr := s.expandAny(e, stack)
				if xerr != nil {
					return nil, xerr
				}
				l = append(l, x)
			}
			out[k] = l
		default:
			out[k] = v
		}
		if err != nil {
			return nil, err
		}
	}
	if _, ok := out["properties"]; ok {
		if _, set := out["additionalProperties"]; !set {
			out["additionalProperties"] = false
		}
	}
	return out, nil
}

func (s *Spec) expandAny(v any, stack []string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema of type %T", v)
	}
	return s.expand(m, stack)
}

func (s *Spec) expandProperties(v, required any, stack []string) (map[string]any, error) {
	props, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("properties is not an object")
	}
	req := map[string]bool{}
	if l, ok := required.([]any); ok {
		for _, r := range l {
			if name, ok := r.(string); ok {
				req[name] = true
			}
		}
	}
	out := make(map[string]any, len(props))
	for name, p := range props {
		m, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("property %s is not a schema", name)
		}
		x, err := s.expand(m, stack)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if !req[name] {
			nullable(x)
		}
		out[name] = x
	}
	return out, nil
}

// nullable lets an optional property be null, as the API server does.
func nullable(x map[string]any) {
	if t, ok := x["type"].(string); ok {
		x["type"] = []any{t, "null"}
		return
	}
	if one, ok := x["oneOf"].([]any); ok {
		x["oneOf"] = append(one, map[string]any{"type": "null"})
	}
}

// Write writes the schema of each "apiVersion kind" pair into dir under FileName.
func (s *Spec) Write(dir string, kinds [][2]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kubeschema: %w", err)
	}
	for _, k := range kinds {
		schema, err := s.Schema(k[0], k[1])
		if err != nil {
			return err
		}
		b, err := json.Marshal(schema)
		if err != nil {
			return fmt.Errorf("kubeschema: %s %s: %w", k[0], k[1], err)
		}
		if err := os.WriteFile(filepath.Join(dir, FileName(k[0], k[1])), b, 0o644); err != nil {
			return fmt.Errorf("kubeschema: %w", err)
		}
	}
	return nil
}
