package checks

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	gwconfig "github.com/sensorgate/sensorgate/gateway/config"
)

// cluster is one built overlay, every object decoded strictly into its API type.
type cluster struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	hpas         map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs         map[string]*policyv1.PodDisruptionBudget
	jobs         map[string]*batchv1.Job
	policies     []*networkingv1.NetworkPolicy
	ingresses    map[string]*networkingv1.Ingress
	namespaces   []string
}

// decode fills the pointer with y, refusing unknown or misspelt fields (UnmarshalStrict),
// as the API server's strict field validation does.
func decode[T any](y []byte, into map[string]*T, name string) error {
	v := new(T)
	if err := yaml.UnmarshalStrict(y, v); err != nil {
		return err
	}
	into[name] = v
	return nil
}

func buildOverlay(t *testing.T, overlay string) *cluster {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	m, err := BuildKustomization(filepath.Join(root, "deploy/k8s/overlays", overlay))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		jobs: map[string]*batchv1.Job{}, ingresses: map[string]*networkingv1.Ingress{}}
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		name, kind := r.GetName(), r.GetKind()
		switch fmt.Sprintf("%s/%s", r.GetApiVersion(), kind) {
		case "v1/Namespace":
			var ns corev1.Namespace
			err = yaml.UnmarshalStrict(y, &ns)
			c.namespaces = append(c.namespaces, ns.Name)
		case "v1/ServiceAccount":
			err = yaml.UnmarshalStrict(y, &corev1.ServiceAccount{})
		case "v1/ConfigMap":
			err = decode(y, c.configMaps, name)
			// Generated names carry a content hash; index them by their kustomization name too.
			c.configMaps[generatedName(name)] = c.configMaps[name]
		case "v1/Secret":
			err = decode(y, c.secrets, name)
			c.secrets[generatedName(name)] = c.secrets[name]
		case "v1/Service":
			err = decode(y, c.services, name)
		case "apps/v1/Deployment":
			err = decode(y, c.deployments, name)
		case "apps/v1/StatefulSet":
			err = decode(y, c.statefulSets, name)
		case "autoscaling/v2/HorizontalPodAutoscaler":
			err = decode(y, c.hpas, name)
		case "policy/v1/PodDisruptionBudget":
			err = decode(y, c.pdbs, name)
		case "batch/v1/Job":
			err = decode(y, c.jobs, name)
		case "networking.k8s.io/v1/Ingress":
			err = decode(y, c.ingresses, name)
		case "networking.k8s.io/v1/NetworkPolicy":
			var np networkingv1.NetworkPolicy
			err = yaml.UnmarshalStrict(y, &np)
			c.policies = append(c.policies, &np)
		default:
			t.Fatalf("%s: object %s %s of an API this test does not know; add it to buildOverlay", overlay, r.GetApiVersion()+"/"+kind, name)
		}
		if err != nil {
			t.Fatalf("%s: %s %s does not decode strictly: %v", overlay, kind, name, err)
		}
	}
	return c
}

// containerEnv resolves a container's environment as the kubelet would: envFrom
// ConfigMaps (which must exist in the build), then env entries. Secret references are
// resolved from secrets (the dev overlay's generated Secret, standing in for production's
// own); refs lists every secret key read.
func (c *cluster) containerEnv(t *testing.T, ctr corev1.Container, secrets map[string]*corev1.Secret) (env map[string]string, refs []string) {
	t.Helper()
	env = map[string]string{}
	for _, from := range ctr.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Errorf("%s: envFrom other than a ConfigMap: %+v", ctr.Name, from)
			continue
		}
		cm, ok := c.configMaps[from.ConfigMapRef.Name]
		if !ok {
			t.Errorf("%s: envFrom ConfigMap %q is not in the build", ctr.Name, from.ConfigMapRef.Name)
			continue
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			refs = append(refs, strings.TrimSuffix(ref.Name, c.hashSuffix(ref.Name))+"/"+ref.Key)
			if ref.Optional != nil && *ref.Optional {
				t.Errorf("%s: %s is an optional secret reference; a missing key must stop the pod", ctr.Name, e.Name)
			}
			s := c.secrets[ref.Name]
			if s == nil {
				s = secrets[ref.Name]
			}
			if s == nil {
				s = externalSecrets[ref.Name]
			}
			if s == nil {
				t.Errorf("%s: %s reads Secret %q, which nothing provides", ctr.Name, e.Name, ref.Name)
				continue
			}
			v, ok := s.StringData[ref.Key]
			if b, okb := s.Data[ref.Key]; okb {
				v, ok = string(b), true
			}
			if !ok {
				t.Errorf("%s: %s reads key %q that Secret %q lacks", ctr.Name, e.Name, ref.Key, ref.Name)
			}
			env[e.Name] = v
		case e.ValueFrom.ResourceFieldRef != nil:
			// The downward API: only the container's own memory limit, in bytes.
			ref := e.ValueFrom.ResourceFieldRef
			lim, ok := ctr.Resources.Limits[corev1.ResourceMemory]
			if ref.Resource != "limits.memory" || (ref.ContainerName != "" && ref.ContainerName != ctr.Name) || !ok {
				t.Errorf("%s: %s reads %s of %q, want limits.memory of a container with a memory limit", ctr.Name, e.Name, ref.Resource, ref.ContainerName)
				continue
			}
			if d := ref.Divisor; !d.IsZero() && d.Value() != 1 {
				t.Errorf("%s: %s divisor %s, want 1 (bytes)", ctr.Name, e.Name, d.String())
			}
			env[e.Name] = strconv.FormatInt(lim.Value(), 10)
		default:
			t.Errorf("%s: %s has an unexpected valueFrom %+v", ctr.Name, e.Name, e.ValueFrom)
		}
	}
	return env, refs
}

// externalSecrets stand in for the Secrets production creates itself (the prod overlay's
// header says how), with every key the overlay reads.
var externalSecrets = map[string]*corev1.Secret{
	"sensorgate-provider-keys": {StringData: map[string]string{
		"EPA_AIRNOW_API_KEY": "k", "OPENAQ_API_KEY": "k", "AMBIENT_WEATHER_API_KEY": "k", "DAVIS_WEATHERLINK_API_KEY": "k"}},
}

// hashRE matches the content hash kustomize appends to a generated object's name.
var hashRE = regexp.MustCompile(`-[0-9a-z]{10}$`)

// generatedName is name without a generator's hash suffix (kustomize keeps no record of
// the name it started from).
func generatedName(name string) string { return hashRE.ReplaceAllString(name, "") }

// hashSuffix is the "-<hash>" kustomize appended to a generated Secret's name, or "".
func (c *cluster) hashSuffix(name string) string {
	for orig, s := range c.secrets {
		if s.Name == name && orig != name && strings.HasPrefix(name, orig+"-") {
			return strings.TrimPrefix(name, orig)
		}
	}
	return ""
}

func containerPort(ctr corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range ctr.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func checkPodSecurity(t *testing.T, what string, spec corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod must run as a non-root uid (runAsNonRoot, runAsUser)", what)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod must use the RuntimeDefault seccomp profile", what)
	}
	for _, ctr := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := ctr.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s/%s: root filesystem must be read-only", what, ctr.Name)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s/%s: allowPrivilegeEscalation must be false", what, ctr.Name)
		}
		if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s/%s: must drop ALL capabilities", what, ctr.Name)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okr := ctr.Resources.Requests[res]
			lim, okl := ctr.Resources.Limits[res]
			if !okr || !okl {
				t.Errorf("%s/%s: %s request and limit must both be set", what, ctr.Name, res)
			} else if req.Cmp(lim) > 0 {
				t.Errorf("%s/%s: %s request %s above its limit %s", what, ctr.Name, res, req.String(), lim.String())
			}
		}
	}
}

var overlays = []string{"dev", "prod"}

// TestKustomizeBinaries: per overlay and binary, a Deployment whose container sets every
// variable the binary reads (to values the binary accepts), with probes on /readyz and
// /healthz of the port it listens on, a Service onto that port, an HPA and a PDB.
func TestKustomizeBinaries(t *testing.T) {
	t.Parallel()
	dev := buildOverlay(t, "dev")
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			t.Parallel()
			c := buildOverlay(t, overlay)
			for _, b := range Binaries() {
				t.Run(b.Name, func(t *testing.T) {
					d, ok := c.deployments[b.Name]
					if !ok {
						t.Fatalf("no Deployment %s", b.Name)
					}
					checkPodSecurity(t, "Deployment "+b.Name, d.Spec.Template.Spec)
					if len(d.Spec.Template.Spec.Containers) != 1 {
						t.Fatalf("Deployment %s: want one container", b.Name)
					}
					ctr := d.Spec.Template.Spec.Containers[0]
					if !strings.HasPrefix(ctr.Image, "sensorgate/"+b.Name+":") {
						t.Errorf("Deployment %s runs image %q", b.Name, ctr.Image)
					}
					if overlay == "prod" && strings.HasSuffix(ctr.Image, ":latest") {
						t.Errorf("prod Deployment %s runs a :latest image", b.Name)
					}
					env, _ := c.containerEnv(t, ctr, dev.secrets)
					if m := missingEnv(b, env); len(m) > 0 {
						t.Errorf("Deployment %s does not set %v (set them, or list them in optional with a reason)", b.Name, m)
					}
					port, err := loadConfig(b, env)
					if err != nil {
						t.Fatalf("Deployment %s: the binary would refuse this environment: %v", b.Name, err)
					}
					if port != b.Port {
						t.Errorf("Deployment %s listens on %d, want %d", b.Name, port, b.Port)
					}
					if b.Gateway {
						if want := map[string]string{"dev": gwconfig.EnvDevelopment, "prod": gwconfig.EnvProduction}[overlay]; env["SENSORGATE_ENV"] != want {
							t.Errorf("gateway SENSORGATE_ENV = %q in %s, want %q", env["SENSORGATE_ENV"], overlay, want)
						}
					}
					for _, pr := range []struct {
						kind  string
						probe *corev1.Probe
						path  string
					}{{"readiness", ctr.ReadinessProbe, "/readyz"}, {"liveness", ctr.LivenessProbe, "/healthz"}} {
						if pr.probe == nil || pr.probe.HTTPGet == nil {
							t.Errorf("Deployment %s: no HTTP %s probe", b.Name, pr.kind)
							continue
						}
						if pr.probe.HTTPGet.Path != pr.path {
							t.Errorf("Deployment %s: %s probe on %s, want %s", b.Name, pr.kind, pr.probe.HTTPGet.Path, pr.path)
						}
						if p, ok := containerPort(ctr, pr.probe.HTTPGet.Port); !ok || int(p) != port {
							t.Errorf("Deployment %s: %s probe port %s is not the listen port %d", b.Name, pr.kind, pr.probe.HTTPGet.Port.String(), port)
						}
					}
					podLabels := labels.Set(d.Spec.Template.Labels)
					sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
					if err != nil || !sel.Matches(podLabels) {
						t.Errorf("Deployment %s: selector does not match its pods", b.Name)
					}
					svc, ok := c.services[b.Name]
					if !ok {
						t.Fatalf("no Service %s", b.Name)
					}
					if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
						t.Errorf("Service %s does not select the Deployment's pods", b.Name)
					}
					if len(svc.Spec.Ports) != 1 || int(svc.Spec.Ports[0].Port) != b.Port {
						t.Errorf("Service %s: want one port %d, got %+v", b.Name, b.Port, svc.Spec.Ports)
					} else if p, ok := containerPort(ctr, svc.Spec.Ports[0].TargetPort); !ok || int(p) != port {
						t.Errorf("Service %s: targetPort %s is not the listen port %d", b.Name, svc.Spec.Ports[0].TargetPort.String(), port)
					}
					hpa, ok := c.hpas[b.Name]
					if !ok {
						t.Fatalf("no HorizontalPodAutoscaler %s", b.Name)
					}
					if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != b.Name || ref.APIVersion != "apps/v1" {
						t.Errorf("HPA %s scales %+v", b.Name, ref)
					}
					if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas || len(hpa.Spec.Metrics) == 0 {
						t.Errorf("HPA %s: want 1 <= min <= max and a metric", b.Name)
					}
					if _, ok := ctr.Resources.Requests[corev1.ResourceCPU]; !ok {
						t.Errorf("HPA %s scales on CPU, but the container requests none", b.Name)
					}
					if overlay == "prod" && *hpa.Spec.MinReplicas < 2 {
						t.Errorf("prod HPA %s: minReplicas %d leaves no replica during a rollout or a node drain", b.Name, *hpa.Spec.MinReplicas)
					}
					pdb, ok := c.pdbs[b.Name]
					if !ok {
						t.Fatalf("no PodDisruptionBudget %s", b.Name)
					}
					psel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
					if err != nil || !psel.Matches(podLabels) {
						t.Errorf("PDB %s does not select the Deployment's pods", b.Name)
					}
					if grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds; grace == nil {
						t.Errorf("Deployment %s: no terminationGracePeriodSeconds", b.Name)
					} else if st, err := parseSeconds(env["SHUTDOWN_TIMEOUT"]); err == nil && float64(*grace) <= st {
						t.Errorf("Deployment %s: grace period %ds does not cover SHUTDOWN_TIMEOUT %s", b.Name, *grace, env["SHUTDOWN_TIMEOUT"])
					}
				})
			}
		})
	}
}

// TestKustomizeWiring: SERVICE_URLS names Services of the build on their ports, the
// internal token is one secret key, each service has its own readings database, and the
// migration runs once as a Job of the gateway image on the gateway's catalog.
func TestKustomizeWiring(t *testing.T) {
	t.Parallel()
	dev := buildOverlay(t, "dev")
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			t.Parallel()
			c := buildOverlay(t, overlay)
			gwCtr := c.deployments["gateway"].Spec.Template.Spec.Containers[0]
			gw, gwRefs := c.containerEnv(t, gwCtr, dev.secrets)
			svcs, err := gwconfig.ParseServices(gw["SERVICE_URLS"])
			if err != nil {
				t.Fatalf("SERVICE_URLS: %v", err)
			}
			if len(svcs) != len(Binaries())-1 {
				t.Errorf("SERVICE_URLS names %d services, want %d", len(svcs), len(Binaries())-1)
			}
			for _, s := range svcs {
				u, _ := url.Parse(s.URL)
				svc, ok := c.services[u.Hostname()]
				if !ok || u.Hostname() != s.ID {
					t.Errorf("SERVICE_URLS %s=%s: want the Service named %s", s.ID, s.URL, s.ID)
					continue
				}
				if len(svc.Spec.Ports) == 0 || fmt.Sprint(svc.Spec.Ports[0].Port) != u.Port() {
					t.Errorf("SERVICE_URLS %s: port %s, the Service serves %+v", s.ID, u.Port(), svc.Spec.Ports)
				}
				env, _ := c.containerEnv(t, c.deployments[s.ID].Spec.Template.Spec.Containers[0], dev.secrets)
				if env["INTERNAL_TOKEN"] == "" || env["INTERNAL_TOKEN"] != gw["INTERNAL_TOKEN"] {
					t.Errorf("%s: INTERNAL_TOKEN is not the gateway's", s.ID)
				}
			}
			readingsDBs := map[string]string{}
			for _, b := range Binaries()[1:] {
				env, _ := c.containerEnv(t, c.deployments[b.Name].Spec.Template.Spec.Containers[0], dev.secrets)
				db := env["READINGS_DATABASE_URL"]
				if db == "" || db == gw["DATABASE_URL"] {
					t.Errorf("%s: READINGS_DATABASE_URL must be its own database", b.Name)
				}
				if other, dup := readingsDBs[db]; dup {
					t.Errorf("%s and %s share READINGS_DATABASE_URL", b.Name, other)
				}
				readingsDBs[db] = b.Name
			}
			if !slices.Contains(gwRefs, "sensorgate-secrets/DATABASE_URL") || !slices.Contains(gwRefs, "sensorgate-secrets/REDIS_URL") {
				t.Errorf("gateway must read DATABASE_URL and REDIS_URL from sensorgate-secrets, reads %v", gwRefs)
			}

			job, ok := c.jobs["gateway-migrate"]
			if !ok {
				t.Fatal("no migration Job gateway-migrate")
			}
			if job.Spec.Parallelism != nil && *job.Spec.Parallelism != 1 || job.Spec.Completions != nil && *job.Spec.Completions != 1 {
				t.Errorf("migration Job must run one pod at a time")
			}
			checkPodSecurity(t, "Job gateway-migrate", job.Spec.Template.Spec)
			jc := job.Spec.Template.Spec.Containers[0]
			if jc.Image != gwCtr.Image || !slices.Equal(jc.Args, []string{"migrate"}) {
				t.Errorf("migration Job runs %s %v, want %s [migrate]", jc.Image, jc.Args, gwCtr.Image)
			}
			jenv, _ := c.containerEnv(t, jc, dev.secrets)
			if jenv["DATABASE_URL"] != gw["DATABASE_URL"] {
				t.Errorf("migration Job migrates another database than the gateway's")
			}
			if _, err := loadConfig(Binaries()[0], mergeAddr(jenv)); err != nil {
				t.Errorf("migration Job: the gateway would refuse this environment: %v", err)
			}
			for _, d := range c.deployments {
				for _, ic := range d.Spec.Template.Spec.InitContainers {
					if slices.Contains(ic.Args, "migrate") {
						t.Errorf("Deployment %s migrates in an init container: every replica would", d.Name)
					}
				}
			}
		})
	}
}

// TestKustomizeSecrets: dev generates the Secret with every key the workloads read; prod
// carries no Secret at all (it is created in the cluster, never committed) and reads only
// keys that dev's Secret defines, the list docs/deploy.md gives.
func TestKustomizeSecrets(t *testing.T) {
	t.Parallel()
	dev := buildOverlay(t, "dev")
	prod := buildOverlay(t, "prod")
	if len(prod.secrets) != 0 {
		t.Errorf("prod overlay carries Secrets %v; production secrets must not be in git", keys(prod.secrets))
	}
	if _, ok := dev.secrets["sensorgate-secrets"]; !ok {
		t.Fatalf("dev overlay generates no sensorgate-secrets: %v", keys(dev.secrets))
	}
	for _, c := range []*cluster{dev, prod} {
		for _, cm := range c.configMaps {
			for k := range cm.Data {
				if slices.Contains([]string{"DATABASE_URL", "REDIS_URL", "INTERNAL_TOKEN", "DEV_API_KEY", "READINGS_DATABASE_URL"}, k) || strings.HasSuffix(k, "_API_KEY") || strings.Contains(k, "PASSWORD") {
					t.Errorf("ConfigMap %s holds the secret %s; it belongs in sensorgate-secrets", cm.Name, k)
				}
			}
		}
	}
}

// TestNetworkPolicies: every policy selecting a backing service's pods admits only the
// gateway's pods, and at least one does (so the default-allow is closed).
func TestNetworkPolicies(t *testing.T) {
	t.Parallel()
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			t.Parallel()
			c := buildOverlay(t, overlay)
			gwPods := labels.Set(c.deployments["gateway"].Spec.Template.Labels)
			for _, b := range Binaries()[1:] {
				pods := labels.Set(c.deployments[b.Name].Spec.Template.Labels)
				selected := 0
				for _, np := range c.policies {
					sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
					if err != nil {
						t.Fatalf("NetworkPolicy %s: %v", np.Name, err)
					}
					if !sel.Matches(pods) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
						continue
					}
					selected++
					for _, rule := range np.Spec.Ingress {
						if len(rule.From) == 0 {
							t.Errorf("NetworkPolicy %s admits everyone to %s", np.Name, b.Name)
						}
						for _, peer := range rule.From {
							if peer.IPBlock != nil || peer.NamespaceSelector != nil || peer.PodSelector == nil {
								t.Errorf("NetworkPolicy %s admits a peer other than the gateway's pods to %s: %+v", np.Name, b.Name, peer)
								continue
							}
							ps, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
							if err != nil || ps.Empty() || !ps.Matches(gwPods) {
								t.Errorf("NetworkPolicy %s: peer %v does not select (only) the gateway", np.Name, peer.PodSelector)
							}
							for _, other := range Binaries()[1:] {
								if ps.Matches(labels.Set(c.deployments[other.Name].Spec.Template.Labels)) {
									t.Errorf("NetworkPolicy %s lets %s reach %s", np.Name, other.Name, b.Name)
								}
							}
						}
						open := len(rule.Ports) == 0
						for _, p := range rule.Ports {
							if p.Port != nil && int(p.Port.IntVal) == b.Port {
								open = true
							}
						}
						if !open {
							t.Errorf("NetworkPolicy %s does not open %s's port %d to the gateway", np.Name, b.Name, b.Port)
						}
					}
				}
				if selected == 0 {
					t.Errorf("no NetworkPolicy restricts who reaches %s", b.Name)
				}
			}
		})
	}
}

// TestInfrastructureSecurity: the dev overlay's PostgreSQL and Redis follow the same pod
// security rules (the namespace enforces the restricted profile).
func TestInfrastructureSecurity(t *testing.T) {
	t.Parallel()
	c := buildOverlay(t, "dev")
	for name, ss := range c.statefulSets {
		checkPodSecurity(t, "StatefulSet "+name, ss.Spec.Template.Spec)
	}
	for name, d := range c.deployments {
		checkPodSecurity(t, "Deployment "+name, d.Spec.Template.Spec)
	}
	if _, ok := c.statefulSets["postgres"]; !ok {
		t.Error("dev overlay has no postgres StatefulSet")
	}
	for _, svc := range []string{"postgres", "redis"} {
		if _, ok := c.services[svc]; !ok {
			t.Errorf("dev overlay has no Service %s", svc)
		}
	}
}

func keys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// mergeAddr gives an admin command's environment a listen address: it does not listen,
// and loadConfig insists on one reachable from outside.
func mergeAddr(env map[string]string) map[string]string {
	out := map[string]string{"GATEWAY_ADDR": net.JoinHostPort("0.0.0.0", "8080")}
	for k, v := range env {
		out[k] = v
	}
	return out
}
