// Command ocean is the ocean backing service (NDBC buoys and coastal stations).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sensorgate/sensorgate/pkg/gctune"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
	"github.com/sensorgate/sensorgate/services/tools"
)

func main() {
	gctune.Apply(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, ocean.Definition(tools.For()), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
