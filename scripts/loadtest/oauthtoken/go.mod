module github.com/sensorgate/sensorgate/scripts/loadtest/oauthtoken

go 1.26.8
