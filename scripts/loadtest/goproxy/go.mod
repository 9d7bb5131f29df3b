module github.com/sensorgate/sensorgate/scripts/loadtest/goproxy

go 1.26.8

require (
	github.com/sensorgate/sensorgate/pkg v0.0.0
	github.com/valyala/fasthttp v1.78.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
)

// The gateway's own upstream transport (pkg/h1pool), from this repository.
replace github.com/sensorgate/sensorgate/pkg => ../../../pkg
