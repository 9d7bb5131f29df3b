package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sensorgate/sensorgate/gateway/outbound"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Webhook delivery (Standard Webhooks, docs/alerts.md "Webhooks").
const (
	// AttemptTimeout bounds one delivery attempt, connection to last byte.
	AttemptTimeout = 15 * time.Second
	// RetryFor is how long an event is retried after its first attempt.
	RetryFor = 72 * time.Hour
	// firstBackoff doubles with each failed attempt up to maxBackoff; the wait is drawn
	// at random between half and all of it (jitter), so receivers coming back are not
	// hit by every sender at once.
	firstBackoff = 5 * time.Second
	maxBackoff   = time.Hour
)

// Sign returns the webhook-signature header for id, timestamp and body under secret
// (whsec_ and base64), per Standard Webhooks: v1, and the base64 HMAC-SHA256 of
// "id.timestamp.body" keyed by the secret's decoded bytes.
func Sign(secret, id string, ts int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("alerts: webhook secret: %w", err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// Guard refuses webhook targets on loopback, private, link-local, unspecified, multicast
// and cloud-metadata addresses unless they are in Allow. It is checked at rule creation
// (the host's addresses) and again at dial time on the address actually dialled, so a
// name that resolves elsewhere later (DNS rebinding) is refused too.
type Guard struct {
	Allow []netip.Prefix
}

// metadata are cloud metadata addresses outside the private ranges (AWS, GCP and Azure
// use 169.254.169.254, link-local already; these are the others).
var metadata = []netip.Prefix{
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS IPv6
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space (carrier NAT), internal by design
}

// Allowed says whether a may be dialled.
func (g Guard) Allowed(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range g.Allow {
		if p.Contains(a) {
			return true
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range metadata {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Control is the dialer's Control func: it runs on the resolved address of each
// connection attempt (the webhooks', and the OAuth client metadata fetches').
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("outbound address %q: %w", address, err)
	}
	if !g.Allowed(ap.Addr()) {
		return fmt.Errorf("outbound target %s is a loopback, private, link-local or metadata address", ap.Addr())
	}
	return nil
}

// CheckURL validates a webhook_url at rule creation: http or https, and every address its
// host resolves to allowed (400 naming webhook_url otherwise).
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || len(raw) > 2000 {
		return apierr.Invalid("webhook_url", "want an http or https URL without credentials, at most 2000 characters")
	}
	host := u.Hostname()
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return apierr.Invalid("webhook_url", "host %q does not resolve", clip(host))
		}
		addrs = ips
	}
	for _, a := range addrs {
		if !g.Allowed(a) {
			return apierr.Invalid("webhook_url", "host %q resolves to %s, a loopback, private, link-local or metadata address", clip(host), a)
		}
	}
	return nil
}

// SenderOptions configure a Sender.
type SenderOptions struct {
	Store *Store
	Guard Guard
	// Workers is how many deliveries run at once per replica (default 16).
	Workers int
	// Poll is how often the outbox is checked when idle (default 500 ms).
	Poll time.Duration
	// Timeout bounds one attempt (default AttemptTimeout) and Backoff is the first wait
	// before a retry (default 5 s); tests shorten both.
	Timeout, Backoff time.Duration
	Logger           *slog.Logger
	Now              func() time.Time
}

// Sender delivers the outbox: every replica runs one; rows are claimed with FOR UPDATE
// SKIP LOCKED (PostgreSQL) under a lease, so replicas never deliver the same row at once,
// and a row whose sender died is delivered again after the lease, with the same
// webhook-id.
type Sender struct {
	o      SenderOptions
	client *http.Client
}

// NewSender returns a sender; Run starts it.
func NewSender(o SenderOptions) *Sender {
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = AttemptTimeout
	}
	if o.Backoff <= 0 {
		o.Backoff = firstBackoff
	}
	// Targets are user-supplied: the client dials only through the guard.
	return &Sender{o: o, client: outbound.Client(o.Timeout, o.Guard.Control)}
}

// Run delivers until ctx ends. Up to Workers attempts run at once; a receiver that hangs
// holds one slot for at most AttemptTimeout while the others go on.
func (s *Sender) Run(ctx context.Context) {
	slots := make(chan struct{}, s.o.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		free := s.o.Workers - len(slots)
		if free == 0 {
			sleep(ctx, s.o.Poll/5)
			continue
		}
		// A claimed row is hidden from other senders for twice an attempt's timeout: it is
		// retried by another replica only when its sender died.
		jobs, err := s.o.Store.claim(ctx, free, s.o.Now(), 2*s.o.Timeout)
		if err != nil {
			if ctx.Err() == nil {
				s.o.Logger.Warn("alerts: outbox unavailable; retrying", "err", err)
			}
			sleep(ctx, 2*time.Second)
			continue
		}
		for _, j := range jobs {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				s.deliver(ctx, j)
			}()
		}
		if len(jobs) < free {
			sleep(ctx, s.o.Poll)
		}
	}
}

// deliver makes one attempt and records it.
func (s *Sender) deliver(ctx context.Context, j job) {
	start := s.o.Now()
	status, aerr := s.attempt(ctx, j, start)
	if ctx.Err() != nil {
		return // shutting down: the lease expires and a replica retries
	}
	d := attemptResult{job: j, at: start, status: status, took: s.o.Now().Sub(start)}
	if aerr != nil {
		d.err = aerr.Error()
	}
	switch {
	case aerr == nil && status >= 200 && status < 300:
		d.outcome = "delivered"
	case status == http.StatusGone:
		d.outcome = "disabled"
	case start.Sub(time.UnixMilli(j.firstMS)) >= RetryFor:
		d.outcome = "gave_up"
	default:
		d.outcome = "retry"
		d.next = start.Add(backoff(s.o.Backoff, j.attempts+1))
	}
	if err := s.o.Store.record(context.WithoutCancel(ctx), d); err != nil {
		s.o.Logger.Warn("alerts: recording a delivery failed; it will be attempted again", "event_id", j.eventID, "err", err)
	}
}

func (s *Sender) attempt(ctx context.Context, j job, now time.Time) (int, error) {
	ts := now.Unix()
	sig, err := Sign(j.secret, j.eventID, ts, j.body)
	if err != nil {
		return 0, err
	}
	if j.previous != "" && now.Before(j.previousUntil) {
		// During a rotation's overlap both secrets sign (space-separated, as Standard
		// Webhooks allows), so receivers that have not switched yet still verify.
		old, err := Sign(j.previous, j.eventID, ts, j.body)
		if err != nil {
			return 0, err
		}
		sig += " " + old
	}
	actx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, j.url, bytes.NewReader(j.body))
	if err != nil {
		return 0, fmt.Errorf("alerts: webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sensorgate-alerts")
	req.Header.Set("webhook-id", j.eventID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("no answer within %s", s.o.Timeout)
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// backoff is the wait before attempt n (n >= 1 failed attempts so far): exponential from
// first, at most maxBackoff, drawn between half and all of it.
func backoff(first time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}
