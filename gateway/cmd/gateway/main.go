// Command gateway is sensorgate's API gateway: the public REST and MCP API in front of the
// backing services, and its admin commands (migrate, keys, catalog import). See
// docs/gateway.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sensorgate/sensorgate/gateway/app"
	"github.com/sensorgate/sensorgate/pkg/gctune"
)

func main() {
	gctune.Apply(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, os.Args, os.Getenv, os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}
