// Package examplestest runs every client of examples/ (Python with pandas and matplotlib,
// JavaScript following a live stream, Go on net/http, the README's curl tour) against a
// real stack: the gateway and the three services as processes, built from this checkout,
// as `make run` starts them. The package has only tests.
package examplestest
