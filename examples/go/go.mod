module sensorgate.example/apiclient

go 1.26
