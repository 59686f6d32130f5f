package periods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// PartitionsAhead is how many months after the current one (or after a
// month being closed, when it is earlier) have their partitions made:
// ledger_ensure_month_partitions, by serve's keeper and before each
// close. The keeper runs every few hours, so a month has its partitions
// about three months before its first day, and sql/0054's bound (two
// months ahead at migration) is reached long before the 36 months the
// function makes at most.
const PartitionsAhead = 4

// ErrPartitionsBusy: ledger_ensure_month_partitions gave up on a lock it
// waits for at most its lock_timeout (a reader of a DEFAULT partition, a
// posting transaction that does not commit, another call making them),
// and made nothing. It is not a failure of anything: try later; a set
// dated in a month without its partition meanwhile is booked in the
// DEFAULT partition.
var ErrPartitionsBusy = errors.New("the ledger's partitions are busy: none made this time")

// EnsurePartitions makes the partitions of posting_sets and postings
// (sql/0056) through PartitionsAhead months after m, or after now's month
// when m is later, in a statement of its own: not in a close's
// transaction, where its locks would be held behind the close lock. It
// returns how many tables it made (0 when every one existed: then it
// took no lock at all). A lock it could not have in time is
// ErrPartitionsBusy.
func EnsurePartitions(ctx context.Context, db sqlx.QueryerContext, m Month, now time.Time) (int, error) {
	through := MonthOf(now)
	if m.Before(through) {
		through = m
	}
	for range PartitionsAhead {
		through = through.Next()
	}
	var made int
	err := sqlx.GetContext(ctx, db, &made, `SELECT ledger_ensure_month_partitions($1)`, through.First().Format(time.DateOnly))
	var pqErr *pq.Error
	// 55P03 lock_not_available: its lock_timeout; 40P01 deadlock_detected
	// only if deadlock_timeout were set below it, which the function
	// guards against.
	if errors.As(err, &pqErr) && (pqErr.Code == "55P03" || pqErr.Code == "40P01") {
		return 0, fmt.Errorf("make the partitions through %s: %w: %w", through, ErrPartitionsBusy, err)
	}
	if err != nil {
		return 0, fmt.Errorf("make the partitions through %s: %w", through, err)
	}
	return made, nil
}

// Keeper makes the months ahead partitioned, closes or not: without it a
// ledger whose months are not closed for a while books every month after
// sql/0054's bound in the DEFAULT partition, where it stays for good (an
// append-only ledger never moves a row out). razao serve runs one on
// every replica; ledger_ensure_month_partitions makes the calls take
// turns, and with nothing to make it takes no lock.
type Keeper struct {
	DB  sqlx.QueryerContext
	Log *slog.Logger
	Now func() time.Time
	// Every is how often it looks (6 h in serve); Retry how soon it tries
	// again after ErrPartitionsBusy (a minute in serve).
	Every, Retry time.Duration
	// Observe, when set, is told each attempt's outcome (serve's metric).
	Observe func(made int, err error)
}

// Run makes the partitions through PartitionsAhead months after the
// current one at once, then every k.Every, until ctx ends; after
// ErrPartitionsBusy it tries again k.Retry later.
func (k *Keeper) Run(ctx context.Context) {
	for {
		wait := k.once(ctx)
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// once makes what is missing and says how long to wait for the next try.
func (k *Keeper) once(ctx context.Context) time.Duration {
	at := k.Now()
	made, err := EnsurePartitions(ctx, k.DB, MonthOf(at), at)
	if ctx.Err() != nil {
		return 0
	}
	if k.Observe != nil {
		k.Observe(made, err)
	}
	switch {
	case errors.Is(err, ErrPartitionsBusy):
		k.Log.Info("periods: the months' partitions were busy; trying again", "error", err, "retry_in", k.Retry.String())
		return k.Retry
	case err != nil:
		k.Log.Warn("periods: the months' partitions were not made; a set of a month without its own is booked in the DEFAULT partition",
			"error", err, "retry_in", k.Every.String())
	case made > 0:
		k.Log.Info("periods: partitions made for the months ahead", "tables", made, "months_ahead", PartitionsAhead)
	}
	return k.Every
}
