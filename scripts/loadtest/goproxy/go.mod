module github.com/sensorgate/sensorgate/scripts/loadtest/goproxy

go 1.26.8
