package config

import "github.com/sensorgate/sensorgate/pkg/settings"

// Vars lists every row of the gateway's table, in order: what the tests check the
// documentation and the binary's -help against.
func Vars() []settings.Var { return settings.Vars(Settings()) }
