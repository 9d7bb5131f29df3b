// Package e2e holds the traffic path's end-to-end tests: real gateway and service
// processes (built from this repository), a real Redis and PostgreSQL, and faults caused
// for real: two gateways sharing one rate-limit budget, a service killed mid-load and
// restarted, a service that hangs, Redis stopped and restarted under a running gateway.
package e2e
