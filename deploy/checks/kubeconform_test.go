package checks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/yaml"

	"github.com/sensorgate/sensorgate/deploy/kubeschema"
)

// kubeReleases are the Kubernetes releases the manifests are validated against, each the
// k8s.io/kubernetes module at a pinned version and hash: 1.34 is the oldest minor the Go
// module proxy serves (and so the oldest cluster we claim; preStop.sleep needs 1.30+),
// 1.37 the minor of the k8s.io/api types the other tests decode into. Bumping: take the
// Sum that `go mod download -json k8s.io/kubernetes@VERSION` prints.
var kubeReleases = []kubeschema.Release{
	{Version: "v1.34.4", Sum: "h1:Yy6R4QB8C9kJPp25GFqEvX5XQwY5qzKeqD0Xx6oAcmk="},
	{Version: "v1.37.2", Sum: "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="},
}

// rendered is one object of a kustomize build.
type rendered struct {
	build, apiVersion, kind, name string
	yaml                          []byte
}

// renderAll builds the base and every overlay under deploy/k8s/overlays.
func renderAll(t *testing.T) []rendered {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{"deploy/k8s/base"}
	overlays, err := os.ReadDir(filepath.Join(root, "deploy/k8s/overlays"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overlays {
		if o.IsDir() {
			dirs = append(dirs, "deploy/k8s/overlays/"+o.Name())
		}
	}
	var out []rendered
	for _, d := range dirs {
		m, err := BuildKustomization(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range m.Resources() {
			y, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rendered{build: d, apiVersion: r.GetApiVersion(), kind: r.GetKind(), name: r.GetName(), yaml: y})
		}
	}
	if len(dirs) < 3 {
		t.Fatalf("builds %v: want the base and at least the dev and prod overlays", dirs)
	}
	return out
}

// specs caches each release's loaded swagger document for the test binary.
var specs sync.Map // version -> func() (*kubeschema.Spec, error)

func loadSpec(t *testing.T, r kubeschema.Release) *kubeschema.Spec {
	t.Helper()
	f, _ := specs.LoadOrStore(r.Version, sync.OnceValues(func() (*kubeschema.Spec, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		path, err := kubeschema.Download(ctx, r)
		if err != nil {
			return nil, err
		}
		return kubeschema.Load(path)
	}))
	spec, err := f.(func() (*kubeschema.Spec, error))()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// newValidator writes the standalone-strict schemas of kinds for release r into a
// temporary folder (a few milliseconds; a folder per test cannot go stale when the
// generator changes) and returns kubeconform's validator on it, strict (duplicate keys
// refused) and with no kind skipped: an object without a schema is an error.
func newValidator(t *testing.T, r kubeschema.Release, kinds [][2]string) validator.Validator {
	t.Helper()
	dir := t.TempDir()
	if err := loadSpec(t, r).Write(dir, kinds); err != nil {
		t.Fatal(err)
	}
	v, err := validator.New([]string{filepath.Join(dir, kubeschema.PathTemplate)}, validator.Opts{
		Strict: true, KubernetesVersion: strings.TrimPrefix(r.Version, "v"), IgnoreMissingSchemas: false,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func kindsOf(objs []rendered) [][2]string {
	var kinds [][2]string
	for _, o := range objs {
		k := [2]string{o.apiVersion, o.kind}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

func describe(res validator.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %d: %v", res.Status, res.Err)
	for _, e := range res.ValidationErrors {
		fmt.Fprintf(&b, "\n    %s: %s", e.Path, e.Msg)
	}
	return b.String()
}

// TestKubeconform validates every object of the base and of every overlay with
// kubeconform against the standalone-strict schemas of each pinned Kubernetes release.
func TestKubeconform(t *testing.T) {
	t.Parallel()
	objs := renderAll(t)
	kinds := kindsOf(objs)
	for _, r := range kubeReleases {
		t.Run(r.Version, func(t *testing.T) {
			v := newValidator(t, r, kinds)
			valid := map[string]int{}
			for _, o := range objs {
				res := v.ValidateResource(resource.Resource{Path: o.build, Bytes: o.yaml})
				if res.Status != validator.Valid {
					t.Errorf("%s: %s %s %s: %s", o.build, o.apiVersion, o.kind, o.name, describe(res))
					continue
				}
				valid[o.kind]++
			}
			for _, want := range []string{"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Ingress", "Job", "NetworkPolicy", "ConfigMap"} {
				if valid[want] == 0 {
					t.Errorf("no valid %s among the rendered objects; the validation did not see them", want)
				}
			}
			t.Logf("Kubernetes %s: %d objects of %d kinds valid: %v", r.Version, len(objs), len(kinds), valid)
		})
	}
}

// TestKubeconformCatchesMistakes: the same validation refuses a rendered object with one
// mistake of each kind a hand edit makes (a misspelt field, at the top or deep in a pod
// template, an HPA metric or an Ingress path; a value of the wrong type; a required field
// left out; a removed API version), and still takes the loose forms the API server takes
// (a number for a quantity, null for an optional field).
func TestKubeconformCatchesMistakes(t *testing.T) {
	t.Parallel()
	objs := renderAll(t)
	find := func(kind, name string) rendered {
		for _, o := range objs {
			if o.build == "deploy/k8s/overlays/prod" && o.kind == kind && o.name == name {
				return o
			}
		}
		t.Fatalf("prod has no %s %s", kind, name)
		return rendered{}
	}
	type obj = map[string]any
	at := func(m obj, path ...any) obj { // walks maps by key and lists by index
		var cur any = m
		for _, p := range path {
			switch k := p.(type) {
			case string:
				cur = cur.(obj)[k]
			case int:
				cur = cur.([]any)[k]
			}
		}
		return cur.(obj)
	}
	rename := func(m obj, from, to string) { m[to] = m[from]; delete(m, from) }
	container := []any{"spec", "template", "spec", "containers", 0}
	cases := []struct {
		name, kind, obj string
		mutate          func(obj)
		wantPath        string // the field the error must name ("" for a missing schema)
		valid           bool
	}{
		{"misspelt top-level field", "Deployment", "gateway", func(m obj) { rename(m, "metadata", "metdata") }, "", false},
		{"misspelt container field", "Deployment", "gateway", func(m obj) { rename(at(m, container...), "imagePullPolicy", "imagePulPolicy") }, "/spec/template/spec/containers/0", false},
		{"misspelt probe field", "Deployment", "ocean", func(m obj) {
			rename(at(m, append(container, "readinessProbe")...), "periodSeconds", "periodSecond")
		}, "/spec/template/spec/containers/0/readinessProbe", false},
		{"replicas as a word", "Deployment", "gateway", func(m obj) { at(m, "spec")["replicas"] = "three" }, "/spec/replicas", false},
		{"port as a string", "Service", "gateway", func(m obj) { at(m, "spec", "ports", 0)["port"] = "eighty" }, "/spec/ports/0/port", false},
		{"misspelt HPA target field", "HorizontalPodAutoscaler", "gateway", func(m obj) {
			rename(at(m, "spec", "metrics", 0, "resource", "target"), "averageUtilization", "averageUtilisation")
		}, "/spec/metrics/0/resource/target", false},
		{"HPA minReplicas as a string", "HorizontalPodAutoscaler", "ocean", func(m obj) { at(m, "spec")["minReplicas"] = "2" }, "/spec/minReplicas", false},
		{"PDB maxUnavailable as a bool", "PodDisruptionBudget", "gateway", func(m obj) { at(m, "spec")["maxUnavailable"] = true }, "/spec/maxUnavailable", false},
		{"Ingress path without pathType", "Ingress", "gateway", func(m obj) {
			delete(at(m, "spec", "rules", 0, "http", "paths", 0), "pathType")
		}, "/spec/rules/0/http/paths/0", false},
		{"removed API version", "Deployment", "gateway", func(m obj) { m["apiVersion"] = "extensions/v1beta1" }, "", false},
		{"cpu limit as a number", "Deployment", "gateway", func(m obj) { at(m, append(container, "resources", "limits")...)["cpu"] = 2 }, "", true},
		{"null optional field", "Deployment", "gateway", func(m obj) { at(m, "metadata")["annotations"] = nil }, "", true},
	}
	for _, r := range kubeReleases {
		v := newValidator(t, r, kindsOf(objs))
		for _, c := range cases {
			o := find(c.kind, c.obj)
			var m obj
			if err := yaml.Unmarshal(o.yaml, &m); err != nil {
				t.Fatal(err)
			}
			c.mutate(m)
			y, err := yaml.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			res := v.ValidateResource(resource.Resource{Path: c.name, Bytes: y})
			switch {
			case c.valid && res.Status != validator.Valid:
				t.Errorf("%s, %s: want valid, got %s", r.Version, c.name, describe(res))
			case c.valid:
			case res.Status == validator.Valid:
				t.Errorf("%s, %s: accepted", r.Version, c.name)
			case c.wantPath != "" && !slices.ContainsFunc(res.ValidationErrors, func(e validator.ValidationError) bool { return e.Path == c.wantPath }):
				t.Errorf("%s, %s: no error at %s: %s", r.Version, c.name, c.wantPath, describe(res))
			default:
				t.Logf("%s, %s: refused: %s", r.Version, c.name, describe(res))
			}
		}
	}
}
