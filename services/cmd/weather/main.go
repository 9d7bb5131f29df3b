// Command weather is the weather backing service (NWS stations).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sensorgate/sensorgate/pkg/gctune"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/tools"
	"github.com/sensorgate/sensorgate/services/weather"
)

func main() {
	gctune.Apply(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, weather.Definition(tools.For()), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
