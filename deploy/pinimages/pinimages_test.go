package pinimages_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/deploy/checks"
	"github.com/sensorgate/sensorgate/deploy/pinimages"
)

// Pinning a copy of the prod overlay: the built Deployments run the pinned tag, or the
// digest where one is given, and the file keeps its comments.
func TestPinProdOverlay(t *testing.T) {
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	k8s := filepath.Join(dir, "k8s")
	if err := os.CopyFS(k8s, os.DirFS(filepath.Join(root, "deploy/k8s"))); err != nil {
		t.Fatal(err)
	}
	kfile := filepath.Join(k8s, "overlays/prod/kustomization.yaml")
	digest := "sha256:" + strings.Repeat("ab", 32)
	if err := pinimages.Pin(kfile, "sensorgate", []string{"gateway", "ocean", "weather", "airquality"}, "1.4.2", map[string]string{"ocean": digest}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(kfile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "# Production:") {
		t.Error("the kustomization lost its comments")
	}
	m, err := checks.BuildKustomization(filepath.Join(k8s, "overlays/prod"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"gateway": "sensorgate/gateway:1.4.2", "ocean": "sensorgate/ocean@" + digest,
		"weather": "sensorgate/weather:1.4.2", "airquality": "sensorgate/airquality:1.4.2"}
	seen := 0
	for _, r := range m.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		imgs, err := r.GetFieldValue("spec.template.spec.containers[0].image")
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[r.GetName()]; ok {
			seen++
			if imgs != w {
				t.Errorf("%s runs %v, want %s", r.GetName(), imgs, w)
			}
		}
	}
	if seen != 4 {
		t.Errorf("found %d of the 4 Deployments", seen)
	}
	if err := pinimages.Pin(kfile, "sensorgate", []string{"gateway"}, "latest", nil); err == nil {
		t.Error("pinning latest was accepted")
	}
}
