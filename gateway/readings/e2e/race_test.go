//go:build race

package e2e

// raceEnabled: the tests run under -race, so the gateway process is built with it too.
const raceEnabled = true
