package alerts

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// SSE stream defaults.
const (
	// DefaultStreamPoll is how often an open stream looks for the key's new events: the
	// events are rows of the alert store (written by whichever replica evaluates), so a
	// stream on any replica reads them there; one indexed query per stream and second.
	DefaultStreamPoll = time.Second
	streamHeartbeat   = 15 * time.Second
	streamBatch       = 100
)

// rawEvent is a stored event: its sequence number (the stream's event id) and its JSON.
type rawEvent struct {
	Seq  int64
	Body string
}

// eventsAfter returns up to limit of keyID's events after seq, oldest first.
func (s *Store) eventsAfter(ctx context.Context, keyID string, seq int64, limit int) ([]rawEvent, error) {
	var rows []rawEvent
	if err := s.db.WithContext(ctx).Raw("SELECT seq, body FROM alert_events WHERE key_id = ? AND seq > ? ORDER BY seq LIMIT ?", keyID, seq, limit).
		Scan(&rows).Error; err != nil {
		return nil, errStore(err)
	}
	return rows, nil
}

// LastSeq is the newest event sequence number of keyID (0 when none): what an MCP
// subscription to the key's events compares to see news.
func (s *Store) LastSeq(ctx context.Context, keyID string) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw("SELECT coalesce(max(seq), 0) FROM alert_events WHERE key_id = ?", keyID).Scan(&n).Error; err != nil {
		return 0, errStore(err)
	}
	return n, nil
}

// stream answers GET /alerts/stream: the key's events from now on (or after Last-Event-ID)
// as Server-Sent Events, `event: alert`, `id:` the event's sequence number.
func (h *Handlers) stream(c *gin.Context) {
	id, err := auth.Caller(c)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var after int64
	if v := c.GetHeader("Last-Event-ID"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			ginerr.Fail(c, apierr.Invalid("Last-Event-ID", "want the id of an event this stream sent"))
			return
		}
	} else if after, err = h.Store.LastSeq(ctx, id.KeyIDText); err != nil {
		ginerr.Fail(c, err)
		return
	}
	if h.Streams.Limiter != nil {
		release, ok := h.Streams.Acquire(c)
		if !ok {
			return
		}
		defer release()
	}
	poll := h.Poll()
	w := c.Writer
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if _, err := fmt.Fprint(w, "retry: 2000\n: alerts\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	lastWrite := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.Stopping:
			_, _ = fmt.Fprint(w, ": the gateway is shutting down; reconnect with Last-Event-ID\n\n")
			_ = rc.Flush()
			return
		case <-tick.C:
		}
		rows, err := h.Store.eventsAfter(ctx, id.KeyIDText, after, streamBatch)
		if err != nil {
			// Already streaming: say so in a comment and let the client reconnect.
			_, _ = fmt.Fprint(w, ": the alert store is unavailable; reconnect with Last-Event-ID\n\n")
			_ = rc.Flush()
			return
		}
		for _, r := range rows {
			if _, err := fmt.Fprintf(w, "event: alert\nid: %d\ndata: %s\n\n", r.Seq, r.Body); err != nil {
				return
			}
			after = r.Seq
		}
		if len(rows) == 0 && time.Since(lastWrite) < streamHeartbeat {
			continue
		}
		if len(rows) == 0 {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		lastWrite = time.Now()
	}
}

// Poll is how often an open stream (SSE or MCP subscription) looks for the key's new
// events.
func (h *Handlers) Poll() time.Duration {
	if h.StreamPoll <= 0 {
		return DefaultStreamPoll
	}
	return h.StreamPoll
}
