// Command weather is the weather backing service (NWS stations).
package main

import (
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/tools"
	"github.com/sensorgate/sensorgate/services/weather"
)

func main() { app.Main(weather.Definition(tools.For())) }
