// Command airquality is the air-quality backing service (OpenAQ and AirNow monitors).
package main

import (
	"github.com/sensorgate/sensorgate/services/airquality"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/tools"
)

func main() { app.Main(airquality.Definition(tools.For())) }
