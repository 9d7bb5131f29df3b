package account

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/alexedwards/scs/postgresstore"
	"github.com/alexedwards/scs/v2"
	"gorm.io/gorm"
)

// Session lifetimes: a session ends 12 hours after sign-in, or after 2 hours unused.
const (
	sessionLifetime    = 12 * time.Hour
	sessionIdleTimeout = 2 * time.Hour
	// CookieName is the session cookie. The __Host- prefix (Secure, Path=/, no Domain) is
	// kept for HTTPS; plain-http development cannot use it.
	CookieName        = "__Host-sg_session"
	devCookieName     = "sg_session"
	sessionCleanupGap = 10 * time.Minute
)

// newSessions is the server-side session manager: sessions live in the catalog database's
// sessions table (scs/postgresstore on PostgreSQL, gormSessions on the SQLite of make run);
// the cookie only carries a random token. Cookies are HttpOnly and SameSite=Lax, and Secure
// unless secure is false (plain-http development, docs/accounts.md).
func newSessions(db *gorm.DB, postgres, secure bool) (*scs.SessionManager, func(), error) {
	m := scs.New()
	m.Lifetime = sessionLifetime
	m.IdleTimeout = sessionIdleTimeout
	m.Cookie.Name = CookieName
	if !secure {
		m.Cookie.Name = devCookieName
	}
	m.Cookie.HttpOnly = true
	m.Cookie.SameSite = http.SameSiteLaxMode
	m.Cookie.Secure = secure
	m.Cookie.Path = "/"
	m.Cookie.Persist = false // a browser session cookie: closing the browser signs out
	stop := func() {}
	if postgres {
		sqlDB, err := db.DB()
		if err != nil {
			return nil, nil, fmt.Errorf("account: sessions: %w", err)
		}
		ps := postgresstore.NewWithCleanupInterval(sqlDB, sessionCleanupGap)
		m.Store, stop = ps, ps.StopCleanup
	} else {
		m.Store = gormSessions{db: db}
	}
	return m, stop, nil
}

// gormSessions is scs.Store over the catalog's sessions table through GORM, for SQLite
// (scs's own sqlite3store needs cgo). Expired rows are ignored by Find and deleted by
// Commit, so the table stays small without a cleanup goroutine.
type gormSessions struct{ db *gorm.DB }

func (g gormSessions) Find(token string) ([]byte, bool, error) {
	var b []byte
	err := g.db.Raw("SELECT data FROM sessions WHERE token = ? AND expiry > ?", token, time.Now().UTC()).Row().Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("account: find session: %w", err)
	}
	return b, true, nil
}

func (g gormSessions) Commit(token string, b []byte, expiry time.Time) error {
	err := g.db.Exec("INSERT INTO sessions (token, data, expiry) VALUES (?, ?, ?) ON CONFLICT (token) DO UPDATE SET data = excluded.data, expiry = excluded.expiry",
		token, b, expiry.UTC()).Error
	if err != nil {
		return fmt.Errorf("account: commit session: %w", err)
	}
	if err := g.db.Exec("DELETE FROM sessions WHERE expiry <= ?", time.Now().UTC()).Error; err != nil {
		return fmt.Errorf("account: drop expired sessions: %w", err)
	}
	return nil
}

func (g gormSessions) Delete(token string) error {
	if err := g.db.Exec("DELETE FROM sessions WHERE token = ?", token).Error; err != nil {
		return fmt.Errorf("account: delete session: %w", err)
	}
	return nil
}
