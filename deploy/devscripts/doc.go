// Package devscripts tests the developer scripts under scripts/ as a new user runs them:
// `make run` (scripts/run.sh) must stop every process it started on Ctrl-C and SIGTERM,
// and `make test`'s set-up (scripts/prereqs.sh) must install what is missing as root or
// name the one command to run otherwise. The package has only tests.
package devscripts
