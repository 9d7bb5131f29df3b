package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sensorgate/sensorgate/gateway/account"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// accountsCmd runs `gateway accounts create-admin|invite|signin-link|list`.
func accountsCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("accounts: want a subcommand: create-admin, invite, signin-link or list\n\n%s", usage)
	}
	sub, rest := args[0], args[1:]
	c := newCommand("accounts "+sub, getenv, stdout)
	var name, email *string
	role := store.RoleUser
	switch sub {
	case "create-admin", "invite":
		name = c.fs.String("name", "", "the person's name; required")
		email = c.fs.String("email", "", "the person's email address (unique)")
		if sub == "create-admin" {
			role = store.RoleAdmin
		} else {
			c.fs.StringVar(&role, "role", store.RoleUser, "user or admin")
		}
	case "signin-link":
		email = c.fs.String("email", "", "email address of the account; required")
	case "list":
	default:
		return fmt.Errorf("accounts: unknown subcommand %q; want create-admin, invite, signin-link or list", sub)
	}
	if err := c.parse(rest, 0, ""); err != nil {
		return err
	}
	if sub != "list" && c.cfg.Account.Origin == "" {
		return fmt.Errorf("accounts %s: ACCOUNT_ORIGIN is not set: the link needs the dashboard's public origin: %w", sub, errUsage)
	}
	st, err := openStore(ctx, c.cfg, adminLogger(c.cfg, stdout))
	if err != nil {
		return err
	}
	defer st.Close()
	links := account.Links{St: st, Origin: c.cfg.Account.Origin}
	switch sub {
	case "list":
		as, err := st.Accounts(ctx)
		if err != nil {
			return fmt.Errorf("accounts list: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tEMAIL\tROLE\tDISABLED")
		for _, a := range as {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\n", a.ID, a.Name, orDash(a.Email), a.Role, a.DisabledAt != nil)
		}
		return tw.Flush()
	case "signin-link":
		a, err := st.AccountByEmail(ctx, *email)
		if err != nil {
			return fmt.Errorf("accounts signin-link: %w", err)
		}
		link, err := links.SignIn(ctx, a.ID)
		if err != nil {
			return fmt.Errorf("accounts signin-link: %w", err)
		}
		_, err = fmt.Fprintf(stdout, "%s\nOne-time sign-in link of %s, valid for %s.\n", link, a.Name, account.SignInLinkTTL)
		return err
	}
	if strings.TrimSpace(*name) == "" {
		return fmt.Errorf("accounts %s: --name is required: %w", sub, errUsage)
	}
	if role != store.RoleUser && role != store.RoleAdmin {
		return fmt.Errorf("accounts %s: --role: want user or admin, got %q: %w", sub, role, errUsage)
	}
	a, err := st.CreateAccount(ctx, store.Account{Name: strings.TrimSpace(*name), Email: *email, Role: role})
	if errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("accounts %s: an account with the email %q exists", sub, *email)
	}
	if err != nil {
		return fmt.Errorf("accounts %s: %w", sub, err)
	}
	link, err := links.Enrol(ctx, a.ID)
	if err != nil {
		return fmt.Errorf("accounts %s: %w", sub, err)
	}
	if err := st.AddAudit(ctx, store.AuditEvent{Actor: "cli", Action: "account." + strings.ReplaceAll(sub, "-", "_"), Target: a.ID.String()}); err != nil {
		return fmt.Errorf("accounts %s: %w", sub, err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n  id     %s\n  name   %s\n  email  %s\n  role   %s\n"+
		"One-time enrolment link, valid for %s: open it to register a passkey for this account.\n",
		link, a.ID, a.Name, orDash(a.Email), a.Role, account.EnrolTTL)
	return err
}
