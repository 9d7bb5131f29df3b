package checks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestDockerfiles: the source build copies every module of go.work (else the workspace
// does not load in the image build), both images run as non-root with the probe as
// healthcheck, and no secret is set at build time.
func TestDockerfiles(t *testing.T) {
	t.Parallel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := modfile.ParseWork("go.work", work, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`(?m)^\s*(ENV|ARG)\b.*\b(DATABASE_URL|REDIS_URL|INTERNAL_TOKEN|DEV_API_KEY|PASSWORD|_API_KEY)\b`)
	for _, name := range []string{"Dockerfile", "Dockerfile.prebuilt"} {
		b, err := os.ReadFile(filepath.Join(root, "deploy/docker", name))
		if err != nil {
			t.Fatal(err)
		}
		df := string(b)
		if name == "Dockerfile" {
			for _, u := range wf.Use {
				dir := strings.TrimPrefix(u.Path, "./")
				if !strings.Contains(df, "COPY "+dir+"/") && !strings.Contains(df, "COPY "+dir+"/go.mod "+dir+"/go.sum") {
					t.Errorf("%s: go.work uses %s but the build does not copy it", name, u.Path)
				}
			}
			if !strings.Contains(df, "CGO_ENABLED=0") {
				t.Errorf("%s: the build must be static (CGO_ENABLED=0)", name)
			}
		}
		if m := secret.FindString(df); m != "" {
			t.Errorf("%s sets a secret at build time: %q", name, strings.TrimSpace(m))
		}
		for _, want := range []string{"USER 65532:65532", `HEALTHCHECK`, `CMD ["/probe"]`, `ENTRYPOINT ["/sensorgate"]`, "0.0.0.0:${PORT}"} {
			if !strings.Contains(df, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
}
