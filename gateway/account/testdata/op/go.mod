module sensorgate.test/op

go 1.26.8

require github.com/zitadel/oidc/v3 v3.52.0 // indirect
