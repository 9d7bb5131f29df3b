module github.com/sensorgate/sensorgate/scripts/loadtest/fixedrate

go 1.26.8
