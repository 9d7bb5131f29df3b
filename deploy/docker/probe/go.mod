module github.com/sensorgate/sensorgate/deploy/docker/probe

go 1.26.8
