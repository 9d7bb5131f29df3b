# sensorgate: `make run` starts the whole stack on embedded defaults; `make test` runs every
# test against real PostgreSQL and Redis (found, or started as throwaway instances), after
# scripts/prereqs.sh installed what is missing (as root) or named the command to run.
GO        ?= go
MODULES   := ./pkg/... ./gateway/... ./services/... ./deploy/... ./deploy/docker/probe/...
BINARIES  := gateway ocean weather airquality
TESTFLAGS ?= -count=1 -timeout 20m

# prereqs: what `make test` needs on a Debian machine with Go (scripts/prereqs.sh).
.PHONY: prereqs
prereqs:
	@scripts/prereqs.sh

.PHONY: all build run test test-short bench bench-formats bench-parquet bench-readings bench-readings-100m vet fmt lint images clean web test-web test-security fuzz fuzz-short

all: build

# Release builds: paths trimmed, symbol and DWARF tables stripped, and Gin without the
# MessagePack codec the gateway never uses (nomsgpack). The module version and commit still
# come from the build information Go embeds (`gateway version`, GET /version).
BUILDTAGS ?= nomsgpack
GOBUILD   := $(GO) build -trimpath -tags $(BUILDTAGS) -ldflags='-s -w'

build:
	@mkdir -p bin
	$(GOBUILD) -o bin/gateway ./gateway/cmd/gateway
	$(GOBUILD) -o bin/ocean ./services/cmd/ocean
	$(GOBUILD) -o bin/weather ./services/cmd/weather
	$(GOBUILD) -o bin/airquality ./services/cmd/airquality

run: build
	@scripts/run.sh

# The concurrency tests of shared paths run again under -race; the keep-alive test of the
# gateway then runs a gateway process built with -race too.
RACE_TESTS := ./pkg/ttlcache/ ./gateway/catalog/ ./pkg/contract/ ./pkg/h1pool/ ./pkg/migrate/ ./gateway/readings/ ./gateway/api/ ./gateway/app/ ./gateway/auth/ ./gateway/bench/ ./gateway/stream/ ./gateway/store/ ./services/runtime/live/ ./pkg/obs/ ./gateway/usage/ ./gateway/alerts/ ./services/runtime/qc/

# web: rebuilds the explorer bundle (gateway/web/dist, committed and embedded in the gateway)
# from its TypeScript sources; needs Node.js and npm (the gateway itself does not).
web:
	cd gateway/web && npm ci --no-audit --no-fund && npx tsc --noEmit && node build.mjs && node tools/palette-check.mjs

test: prereqs lint
	@scripts/testenv.sh $(GO) test $(TESTFLAGS) $(MODULES)
	@scripts/testenv.sh $(GO) test -race $(TESTFLAGS) $(RACE_TESTS)
	@scripts/testenv.sh $(GO) test -race $(TESTFLAGS) -run 'TestConcurrentClients' ./gateway/readings/e2e/
	@scripts/testenv.sh $(GO) test -race $(TESTFLAGS) -run 'TestScanReadsAheadInOrder' ./services/runtime/store/
	@scripts/testenv.sh $(GO) test -race $(TESTFLAGS) -run 'TestConcurrentExportsNeverMix|TestCSVExportMatchesEncodingCSV' ./services/runtime/httpapi/
	@$(MAKE) --no-print-directory test-web
	@$(MAKE) --no-print-directory fuzz-short

# test-security: the OWASP API Top 10 suite (gateway/security, docs/security.md) on real
# processes; `make test` runs it too, as part of ./gateway/...
test-security:
	@scripts/testenv.sh $(GO) test $(TESTFLAGS) -v -run 'TestOWASPAPITop10' ./gateway/security/

# fuzz: every native fuzz target (query parsers, provider adapters, MCP) for FUZZTIME each
# (default 2m); fuzz-short, run by `make test`, gives each a few seconds. Corpora are
# committed under each package's testdata/fuzz (FUZZ_SAVE=1 adds what a run found).
FUZZTIME ?= 2m
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

fuzz-short:
	@FUZZTIME=3s scripts/fuzz.sh

# test-web: the explorer's browser tests (gateway/web/test): Debian's chromium driven by
# playwright-core against the gateway and services built from this checkout.
test-web:
	cd gateway/web && npm ci --no-audit --no-fund && node --test test/

vet:
	$(GO) vet $(MODULES)
	@for m in scripts/loadtest/fixedrate scripts/loadtest/goproxy scripts/loadtest/oauthtoken examples/go examples/mcp/stdio-bridge; do (cd $$m && GOWORK=off $(GO) vet .) || exit 1; done

fmt:
	gofmt -l -w pkg gateway services deploy scripts examples

# lint: the README check (scripts/readme-check.sh: every go.mod requirement and package
# directory named), gofmt and go vet always; golangci-lint (.golangci.yml) too when installed.
lint: vet
	@scripts/readme-check.sh
	@test -z "$$(gofmt -l pkg gateway services deploy scripts examples)" || (echo "gofmt would change:"; gofmt -l pkg gateway services deploy scripts examples; exit 1)
	@if command -v golangci-lint >/dev/null 2>&1; then golangci-lint run ./pkg/... ./gateway/... ./services/...; \
	else echo "lint: golangci-lint not installed, ran gofmt and go vet only"; fi

# openapi-lint: Redocly CLI (pinned in scripts/api-client) on the OpenAPI document, installed
# into scripts/api-client/node_modules; `make test` runs the same lint through
# gateway/openapi's TestRedoclyLint (0 errors, 0 warnings).
.PHONY: openapi-lint
openapi-lint:
	cd scripts/api-client && npm ci --no-audit --no-fund --loglevel=error && \
		node_modules/.bin/redocly lint --config redocly.yaml ../../gateway/openapi/openapi.yaml

# pgo: profile-guided optimization input of the gateway (docs/traffic.md "Speed"): the load
# test's gateway paths (uncached, hot, 500-row page plain and gzip) under wrk with the CPU
# profiled, merged into gateway/cmd/gateway/default.pgo (committed), which `go build` of the
# main package uses by itself. Rerun after changes to the request path, then commit the file.
PGO_ROUNDS ?= 2
PGO_SECONDS ?= 10
.PHONY: pgo
pgo:
	scripts/loadtest.sh -n $(PGO_ROUNDS) -d $(PGO_SECONDS) -p gateway/cmd/gateway/default.pgo

bench:
	@scripts/testenv.sh $(GO) test -run '^$$' -bench . -benchtime 2s $(MODULES)

# OGC API p99 beside the matching REST calls (docs/ogc.md "Speed"); refuses on a busy machine.
.PHONY: bench-ogc
bench-ogc:
	scripts/ogc-bench.sh

# The readings store at scale (docs/services.md "Scale"): BENCH_STATIONS x BENCH_PER
# NDBC-shaped readings loaded into the dedicated database BENCH_DB (created when missing),
# then latest / page / aggregate p99, the gzip ratio of a 500-row page and the export rate
# with peak RSS. bench-readings-100m is the 100M-reading run (about 20 GB, hours to load).
# BENCH_KEEP=1 measures a dataset kept from an earlier run without loading it again (it
# loads only when BENCH_DBNAME holds fewer than BENCH_STATIONS x BENCH_PER readings).
BENCH_DBNAME ?= sensorgate_bench
BENCH_DB ?= postgres://postgres@127.0.0.1:5432/$(BENCH_DBNAME)?sslmode=disable
BENCH_STATIONS ?= 100
BENCH_PER ?= 100000
BENCH_KEEP ?=
bench-readings:
	@createdb -h 127.0.0.1 -U postgres $(BENCH_DBNAME) 2>/dev/null || true
	$(GO) run ./services/runtime/cmd/readingsbench -db "$(BENCH_DB)" -stations $(BENCH_STATIONS) -per-station $(BENCH_PER) $(if $(BENCH_KEEP),-reuse) $(BENCH_FLAGS)
bench-readings-100m:
	$(MAKE) bench-readings BENCH_STATIONS=1000 BENCH_PER=100000

# The export formats side by side (docs/formats.md "Measurements"): ndjson, csv, parquet and
# netcdf of the same export through the gateway, readings/s, bytes per reading, CPU and
# peak RSS of the gateway and the service. FORMATS_BENCH_DB names a kept readingsbench
# database (see BenchmarkExportThroughGateway); without it 4 x 20,000 readings are loaded.
# bench-parquet compares the Parquet codecs and row group sizes in process. Run them on a
# quiet machine (load average below 1).
bench-formats:
	SENSORGATE_EXPORT_BENCH_DB="$(FORMATS_BENCH_DB)" scripts/testenv.sh $(GO) test -run '^$$' -bench 'ExportThroughGateway' -benchtime 1x -timeout 60m ./gateway/export/
bench-parquet:
	$(GO) test -run '^$$' -bench 'ParquetChoices' -benchtime 3x ./gateway/science/

# Container images (deploy/docker, docs/deploy.md). `images` compiles inside the image
# build (needs registry access for golang and distroless); `images-prebuilt` compiles static
# binaries here and copies them onto an empty (scratch) base, for machines without it.
DOCKER    ?= docker
IMAGE_TAG ?= latest
IMAGE_REPO ?= sensorgate
PORT_gateway := 8080
PORT_ocean := 8081
PORT_weather := 8082
PORT_airquality := 8083
CMD_gateway := ./gateway/cmd/gateway
CMD_ocean := ./services/cmd/ocean
CMD_weather := ./services/cmd/weather
CMD_airquality := ./services/cmd/airquality
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt

.PHONY: images-prebuilt static docker-engine compose-cli base-images compose-images compose-test k8s-pin-images

static:
	@mkdir -p build/static
	$(foreach b,$(BINARIES),CGO_ENABLED=0 GOOS=linux $(GOBUILD) -o build/static/$(b) $(CMD_$(b)) &&) true
	cd deploy/docker/probe && CGO_ENABLED=0 GOOS=linux GOWORK=off $(GO) build -trimpath -ldflags='-s -w' -o ../../../build/static/probe .

images:
	$(foreach b,$(BINARIES),$(DOCKER) build -f deploy/docker/Dockerfile --build-arg BINARY=$(b) --build-arg PORT=$(PORT_$(b)) -t $(IMAGE_REPO)/$(b):$(IMAGE_TAG) . &&) true

images-prebuilt: static
	$(foreach b,$(BINARIES),mkdir -p build/image/$(b) && cp build/static/$(b) build/image/$(b)/sensorgate && cp build/static/probe build/image/$(b)/probe && cp $(CA_BUNDLE) build/image/$(b)/ca-certificates.crt && DOCKER_BUILDKIT=0 $(DOCKER) build -q -f deploy/docker/Dockerfile.prebuilt --build-arg PORT=$(PORT_$(b)) -t $(IMAGE_REPO)/$(b):$(IMAGE_TAG) build/image/$(b) &&) true

clean:
	rm -rf bin data build

# The compose stack in a real Docker engine (docs/deploy.md, "Compose test"). Everything
# slow is cached outside the clone in $(SENSORGATE_CACHE): the Compose CLI built from its Go
# module, the debootstrap root file system; the images live in Docker's own cache.
SENSORGATE_CACHE ?= $(HOME)/.cache/sensorgate
export SENSORGATE_CACHE

docker-engine:
	@scripts/docker/engine.sh

compose-cli:
	@scripts/docker/compose-cli.sh

base-images: docker-engine
	@scripts/docker/base-images.sh

compose-images: base-images images-prebuilt
	@$(DOCKER) image prune -f --filter label=org.sensorgate.build=prebuilt >/dev/null

# The stack runs from docker-compose.yml with docker-compose.local.yml over it: the
# infrastructure images made without a registry (this machine cannot reach Docker Hub).
# COMPOSE_FILES=docker-compose.yml tests the official images on a host that can pull them.
COMPOSE_FILES ?= docker-compose.yml docker-compose.local.yml
compose-test: compose-images
	COMPOSE="$$(scripts/docker/compose-cli.sh)" COMPOSE_FILES="$(COMPOSE_FILES)" $(GO) test -count=1 -timeout 30m -tags compose -v ./deploy/composetest/

# A real single-node Kubernetes here (Debian's containerd, runc, CNI plugins and etcd;
# Kubernetes, CoreDNS and metrics-server built from their Go modules), the k8s-test overlay
# applied and checked, then torn down (docs/deploy.md, "Kubernetes test"). Slow, needs
# root; outside CI and `make test`. K8S_KEEP=1 leaves the cluster up.
.PHONY: k8s-test
k8s-test:
	scripts/k8s-test.sh

# Pins the prod overlay's images (kustomize image transformer) to IMAGE_TAG, or to digests
# given as IMAGE_DIGESTS=gateway=sha256:...,ocean=sha256:...: make k8s-pin-images IMAGE_TAG=0.2.0
k8s-pin-images:
	$(GO) run ./deploy/pinimages/cmd -tag '$(IMAGE_TAG)' -repo '$(IMAGE_REPO)' -digests '$(IMAGE_DIGESTS)' deploy/k8s/overlays/prod/kustomization.yaml
