// Package security holds the gateway's security suite (`make test-security`, part of
// `make test`): real gateway and service processes on real PostgreSQL and Redis, walked
// through the OWASP API Security Top 10 (2023), one test group per item (API1..API10).
// docs/security.md lists what each group proves. The package has no non-test code.
package security
