//go:build !race

package testenv

// raceEnabled says the tests run under -race.
const raceEnabled = false
