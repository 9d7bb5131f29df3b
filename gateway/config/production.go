package config

import (
	"errors"
	"strings"
)

// ProductionMissing lists what a production gateway must be given and was not, each with
// the variable that sets it: the internal token (services refuse calls without it, and
// anyone on their network could call them), Redis (replicas would each count their own
// budget and wrong-key throttle) and the plans (every key would get the development
// budget). Empty outside production. serve refuses to start with all of them in one
// message; admin commands (migrate, keys) do not need them.
func (c Config) ProductionMissing() []string {
	if c.Env != EnvProduction {
		return nil
	}
	return holding(
		when{c.InternalToken == "", "INTERNAL_TOKEN (flag -internal-token): the shared secret the backing services demand"},
		when{c.RedisURL == "", "REDIS_URL (flag -redis-url): the shared rate-limit and wrong-key counters of all replicas"},
		when{len(c.RateLimit.Plans) == 0, "RATE_LIMIT_PLANS (flag -rate-limit-plans): the budgets of production plans, e.g. default=1000/h,pro=10000/h"},
	)
}

// CheckProduction is ProductionMissing as one error, or nil.
func (c Config) CheckProduction() error {
	missing := c.ProductionMissing()
	if len(missing) == 0 {
		return nil
	}
	return errors.New("production mode (SENSORGATE_ENV=production) refuses to start without:\n  " + strings.Join(missing, "\n  "))
}

// DevelopmentDefaults lists the embedded defaults a development gateway runs on, for the one
// line it logs at start; empty in production.
func (c Config) DevelopmentDefaults() []string {
	if c.Env != EnvDevelopment {
		return nil
	}
	return holding(
		when{c.DevAPIKey == DefaultDevAPIKey, "the public development key"},
		when{c.DatabaseURL == "", "the SQLite catalog " + c.SQLitePath},
		when{c.InternalToken == "", "no internal token"},
		when{c.RedisURL == "", "in-process rate limits"},
		when{len(c.RateLimit.Plans) == 0, "the development budget for every key"},
	)
}

// when is a line of a list that holds only when its condition does.
type when struct {
	cond bool
	line string
}

// holding lists the lines whose condition holds, in order; nil when none does.
func holding(ws ...when) []string {
	var out []string
	for _, w := range ws {
		if w.cond {
			out = append(out, w.line)
		}
	}
	return out
}
