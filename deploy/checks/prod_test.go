package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/services/runtime/ingest"
)

// TestProductionOverlay: the prod overlay polls the real providers with each key-needing
// provider's key from the Secret, carries no development key, derives GOMEMLIMIT from
// each memory limit (downward API), pins every image, and exposes the gateway alone through
// an Ingress with TLS (cert-manager) that lets browsers read the rate-limit headers; every
// Deployment has an HPA and a PDB.
func TestProductionOverlay(t *testing.T) {
	t.Parallel()
	c := buildOverlay(t, "prod")
	dev := buildOverlay(t, "dev") // its generated Secret stands in for production's own
	for _, b := range Binaries() {
		d := c.deployments[b.Name]
		if d == nil {
			t.Fatalf("no Deployment %s", b.Name)
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		env, refs := c.containerEnv(t, ctr, dev.secrets)
		if _, ok := env["DEV_API_KEY"]; ok {
			t.Errorf("%s sets DEV_API_KEY in production", b.Name)
		}
		if env["MEMORY_LIMIT"] == "" || env["MEMORY_LIMIT"] == "0" {
			t.Errorf("%s: MEMORY_LIMIT (GOMEMLIMIT's base) not from the memory limit: %q", b.Name, env["MEMORY_LIMIT"])
		}
		tag := ctr.Image[strings.LastIndex(ctr.Image, ":")+1:]
		if tag == "latest" || tag == "dev" || (!strings.Contains(ctr.Image, "@sha256:") && !strings.ContainsAny(tag, "0123456789")) {
			t.Errorf("%s: image %q is not pinned to a version or digest", b.Name, ctr.Image)
		}
		if c.hpas[b.Name] == nil || c.pdbs[b.Name] == nil {
			t.Errorf("%s: HPA %v, PDB %v; want both", b.Name, c.hpas[b.Name] != nil, c.pdbs[b.Name] != nil)
		}
		if b.Gateway {
			continue
		}
		if env["SOURCE_MODE"] != ingest.ModeLive {
			t.Errorf("%s: SOURCE_MODE %q, want live", b.Name, env["SOURCE_MODE"])
		}
		for _, p := range b.Def.Providers {
			if !p.Live.NeedsAPIKey {
				continue
			}
			want := "sensorgate-provider-keys/" + strings.ToUpper(strings.ReplaceAll(p.Slug(), "-", "_")) + "_API_KEY"
			if !slices.Contains(refs, want) {
				t.Errorf("%s: provider %s needs an API key; want it from %s, refs %v", b.Name, p.Slug(), want, refs)
			}
		}
	}
	ing := c.ingresses["gateway"]
	if ing == nil {
		t.Fatal("prod: no Ingress gateway")
	}
	if len(ing.Spec.TLS) == 0 || ing.Spec.TLS[0].SecretName == "" || len(ing.Spec.TLS[0].Hosts) == 0 {
		t.Errorf("Ingress: no TLS host and secret: %+v", ing.Spec.TLS)
	}
	if ing.Annotations["cert-manager.io/cluster-issuer"] == "" && ing.Annotations["cert-manager.io/issuer"] == "" {
		t.Error("Ingress: no cert-manager issuer annotation")
	}
	for _, h := range []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"} {
		if !strings.Contains(ing.Annotations["nginx.ingress.kubernetes.io/cors-expose-headers"], h) {
			t.Errorf("Ingress: CORS does not expose %s", h)
		}
	}
	for _, r := range ing.Spec.Rules {
		if r.Host != ing.Spec.TLS[0].Hosts[0] {
			t.Errorf("Ingress: rule host %q not covered by TLS", r.Host)
		}
		for _, p := range r.HTTP.Paths {
			svc := c.services[p.Backend.Service.Name]
			if p.Backend.Service.Name != "gateway" || svc == nil {
				t.Errorf("Ingress: path %s goes to %q, want the gateway Service", p.Path, p.Backend.Service.Name)
				continue
			}
			found := false
			for _, sp := range svc.Spec.Ports {
				found = found || sp.Name == p.Backend.Service.Port.Name || sp.Port == p.Backend.Service.Port.Number
			}
			if !found {
				t.Errorf("Ingress: the gateway Service has no port %+v", p.Backend.Service.Port)
			}
		}
	}
}
