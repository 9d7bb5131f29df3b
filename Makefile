# sensorgate: `make run` starts the whole stack on embedded defaults; `make test` runs every
# test against real PostgreSQL and Redis (found, or started as throwaway instances).
GO        ?= go
MODULES   := ./pkg/... ./gateway/... ./services/...
BINARIES  := gateway ocean weather airquality
TESTFLAGS ?= -count=1 -timeout 20m

.PHONY: all build run test test-short bench vet fmt lint images clean

all: build

build:
	@mkdir -p bin
	$(GO) build -o bin/gateway ./gateway/cmd/gateway
	$(GO) build -o bin/ocean ./services/cmd/ocean
	$(GO) build -o bin/weather ./services/cmd/weather
	$(GO) build -o bin/airquality ./services/cmd/airquality

run: build
	@scripts/run.sh

test:
	@scripts/testenv.sh $(GO) test $(TESTFLAGS) $(MODULES)

vet:
	$(GO) vet $(MODULES)

fmt:
	gofmt -l -w pkg gateway services

lint: vet
	@test -z "$$(gofmt -l pkg gateway services)" || (gofmt -l pkg gateway services; exit 1)

bench:
	@scripts/testenv.sh $(GO) test -run '^$$' -bench . -benchtime 2s $(MODULES)

clean:
	rm -rf bin data
