package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
)

func keysCreate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	// -env is the key's environment here; the gateway's own comes from SENSORGATE_ENV.
	c := newCommand("keys create", getenv, stdout, "env")
	owner := c.fs.String("owner", "", "name of the key's owner (a user, created when new); required")
	env := c.fs.String("env", "", "environment of the key: development or production (default: the gateway's, SENSORGATE_ENV)")
	plan := c.fs.String("plan", "", "rate-limit plan of a production key (see RATE_LIMIT_PLANS)")
	name := c.fs.String("name", "", "label of the key, shown in keys list")
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	keyEnv := *env
	if keyEnv == "" {
		keyEnv = c.cfg.Env
	}
	var problems []string
	if strings.TrimSpace(*owner) == "" {
		problems = append(problems, "--owner is required: the name of the key's owner")
	}
	if keyEnv != catalog.EnvDevelopment && keyEnv != catalog.EnvProduction {
		problems = append(problems, fmt.Sprintf("--env: want development or production, got %q", keyEnv))
	}
	if len(problems) > 0 {
		return fmt.Errorf("keys create: %s: %w", strings.Join(problems, "; "), errUsage)
	}
	log := adminLogger(c.cfg, stdout)
	st, err := openStore(ctx, c.cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()

	ownerName := strings.TrimSpace(*owner)
	u, err := st.CreateUser(ctx, catalog.User{ID: auth.OwnerID(ownerName), Name: ownerName})
	if err != nil && !errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("keys create: owner %q: %w", ownerName, err)
	}
	if errors.Is(err, catalog.ErrConflict) {
		if u, err = st.User(ctx, auth.OwnerID(ownerName)); err != nil {
			return fmt.Errorf("keys create: owner %q: %w", ownerName, err)
		}
	}
	nk, err := auth.Generate(keyEnv)
	if err != nil {
		return fmt.Errorf("keys create: %w", err)
	}
	k, err := st.CreateKey(ctx, catalog.APIKey{
		Name: *name, Prefix: nk.Prefix, Hash: nk.Hash, OwnerID: u.ID, Environment: keyEnv, Plan: *plan,
	})
	if err != nil {
		return fmt.Errorf("keys create: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n  id       %s\n  prefix   %s\n  owner    %s (%s)\n  env      %s\n  plan     %s\n"+
		"This key is shown once: only its SHA-256 hash is stored. Send it in the x-api-key header.\n",
		nk.Secret, k.ID, k.Prefix, u.Name, u.ID, k.Environment, orDash(k.Plan))
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func keysList(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCommand("keys list", getenv, stdout)
	if err := c.parse(args, 0, ""); err != nil {
		return err
	}
	st, err := openStore(ctx, c.cfg, adminLogger(c.cfg, stdout))
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.Keys(ctx)
	if err != nil {
		return fmt.Errorf("keys list: %w", err)
	}
	owners := map[uuid.UUID]string{}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPREFIX\tOWNER\tENV\tPLAN\tCREATED\tREVOKED\tNAME")
	for _, k := range keys {
		on, ok := owners[k.OwnerID]
		if !ok {
			on = k.OwnerID.String()
			if u, err := st.User(ctx, k.OwnerID); err == nil {
				on = u.Name
			}
			owners[k.OwnerID] = on
		}
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, on, k.Environment, orDash(k.Plan),
			k.CreatedAt.UTC().Format(time.RFC3339), revoked, orDash(k.Name))
	}
	return tw.Flush()
}

func keysRevoke(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCommand("keys revoke", getenv, stdout)
	if err := c.parse(args, 1, "one key id or prefix"); err != nil {
		return err
	}
	ref := c.fs.Arg(0)
	st, err := openStore(ctx, c.cfg, adminLogger(c.cfg, stdout))
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.RevokeKey(ctx, ref, time.Now())
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return fmt.Errorf("keys revoke: no key has the id or prefix %q (see keys list)", ref)
	case errors.Is(err, catalog.ErrConflict):
		return fmt.Errorf("keys revoke: %w", err)
	case err != nil:
		return fmt.Errorf("keys revoke: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "revoked key %s (%s) at %s; every gateway refuses it within KEY_CACHE_TTL (%s)\n",
		k.ID, k.Prefix, k.RevokedAt.UTC().Format(time.RFC3339), c.cfg.KeyCacheTTL)
	return err
}
