// Command ocean is the ocean backing service (NDBC buoys and coastal stations).
package main

import (
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/tools"
)

func main() { app.Main(ocean.Definition(tools.For())) }
