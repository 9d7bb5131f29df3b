package config

import "github.com/sensorgate/sensorgate/pkg/settings"

// Vars lists every row of a service's table, in order: what the tests check the
// documentation and the binaries' -help against.
func Vars(serviceID string, defaultPort int, providerSlugs []string) []settings.Var {
	return settings.Vars(Settings(serviceID, defaultPort, providerSlugs))
}
