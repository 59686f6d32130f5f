package inbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// inboxChannel is the NOTIFY channel on which replicas ring each other's
// doorbells.
const inboxChannel = "razao_inbox"

// notifyInterval spaces the NOTIFYs a replica sends: rings in between
// share the next one. Each NOTIFY is a transaction of its own, sent after
// the commit it announces (inside it, NOTIFY would serialise every
// writer's commit on one lock: see migration 0006), and wakes a worker of
// every replica. A replica only asks for help while its own workers are
// all busy, and they take what it stored within a batch or two anyway.
const notifyInterval = 100 * time.Millisecond

// doorbell wakes idle workers when deliveries become due, so that a
// delivery is applied within milliseconds of its commit rather than at the
// next poll. A ring wakes one idle worker of this process; a worker that
// claims a full batch rings again, waking the next. When every worker of
// this process is busy, a ring also asks the other replicas for help,
// with a NOTIFY. The bell is only a hint: the inbox says what is due, and
// every worker polls it anyway.
type doorbell struct {
	self   string        // this process's NOTIFY payload: its own are not rung again
	wake   chan struct{} // one token: rings while no one waits are not lost
	remote chan struct{} // one token: a NOTIFY is due
	idle   atomic.Int32  // workers waiting on wake
	notify atomic.Bool   // the NOTIFY side runs (Worker.Listen)
}

func newDoorbell() *doorbell {
	var id [8]byte
	rand.Read(id[:])
	return &doorbell{self: hex.EncodeToString(id[:]), wake: make(chan struct{}, 1), remote: make(chan struct{}, 1)}
}

// ring wakes an idle worker here, or, when none is idle, the replicas.
func (d *doorbell) ring() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
	if d.notify.Load() && d.idle.Load() == 0 {
		select {
		case d.remote <- struct{}{}:
		default:
		}
	}
}

// wait blocks until the bell rings, tick fires or ctx ends.
func (d *doorbell) wait(ctx context.Context, tick <-chan time.Time) {
	d.idle.Add(1)
	defer d.idle.Add(-1)
	select {
	case <-ctx.Done():
	case <-d.wake:
	case <-tick:
	}
}

// announce sends the replicas' NOTIFYs, one per notifyInterval at most,
// until ctx ends.
func (p *Processor) announceLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.bell.remote:
		}
		p.announce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyInterval):
		}
	}
}

// announce rings the doorbells of every other replica listening.
func (p *Processor) announce(ctx context.Context) {
	if _, err := p.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, inboxChannel, p.bell.self); err != nil && ctx.Err() == nil {
		// The workers' poll finds the deliveries anyway, a little later.
		p.log.Warn("inbox notify failed", "error", err)
	}
}

// listen rings this process's doorbell on every other replica's NOTIFY,
// and after each reconnection (notifications may have been lost), until
// ctx ends.
func (p *Processor) listen(ctx context.Context, url string) {
	l := pq.NewListener(url, time.Second, 30*time.Second, func(ev pq.ListenerEventType, err error) {
		if ev != pq.ListenerEventConnected && ev != pq.ListenerEventReconnected {
			p.log.Warn("inbox: listener connection problem", "event", ev.String(), "err", err)
		}
	})
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	if err := l.Listen(inboxChannel); err != nil {
		if ctx.Err() == nil {
			p.log.Warn("inbox: listen failed; workers poll", "error", err)
		}
		l.Close()
		return
	}
	for n := range l.Notify {
		if n != nil && n.Extra == p.bell.self {
			continue // its own workers were busy: that is why it asked
		}
		select {
		case p.bell.wake <- struct{}{}:
		default:
		}
	}
}
