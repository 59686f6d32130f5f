package periods_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// partitionsEnv is a ledger of its own for the partition tests: its pool,
// its URL (for sessions of their own), and the first month after
// posting_sets_past, the first ledger_ensure_month_partitions makes.
type partitionsEnv struct {
	db    *sqlx.DB
	url   string
	cal   periods.Calendar
	first periods.Month
}

func newPartitionsEnv(t testing.TB) *partitionsEnv {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		t.Fatal(err)
	}
	var bound time.Time
	if err := db.Get(&bound, `SELECT substring(pg_get_expr(relpartbound, 0) FROM 'TO \(''([0-9-]+)''\)')::date
		FROM pg_class WHERE oid = 'posting_sets_past'::regclass`); err != nil {
		t.Fatal(err)
	}
	return &partitionsEnv{db: db, url: url, cal: cal, first: periods.MonthOf(bound)}
}

// session is a pool of its own: its connections are sessions that have
// planned nothing yet, as a replica's new ones have.
func (e *partitionsEnv) session(t testing.TB) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("postgres", razao.DriverURL(e.url))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func partitionName(table string, m periods.Month) string {
	return fmt.Sprintf("%s_%04d_%02d", table, m.Year, int(m.Month))
}

func (e *partitionsEnv) exists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	if err := e.db.Get(&ok, `SELECT to_regclass($1) IS NOT NULL`, name); err != nil {
		t.Fatal(err)
	}
	return ok
}

// ensure makes the partitions through m, as the owner would by hand.
func (e *partitionsEnv) ensure(ctx context.Context, db sqlx.QueryerContext, m periods.Month) (int, error) {
	var made int
	err := sqlx.GetContext(ctx, db, &made, `SELECT ledger_ensure_month_partitions($1)`, m.First().Format(time.DateOnly))
	return made, err
}

// waiters is how many sessions of the test's database wait on a lock.
func (e *partitionsEnv) waiters(t testing.TB) int {
	t.Helper()
	var n int
	if err := e.db.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`); err != nil {
		t.Fatal(err)
	}
	return n
}

// doneOrWaiting returns once the call behind done has returned (its
// error, true) or n sessions wait on a lock (nil, false): which of the
// two happens first is what the lock order decides, not a clock.
func (e *partitionsEnv) doneOrWaiting(t testing.TB, done <-chan error, n int) (error, bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			return err, true
		default:
		}
		if e.waiters(t) >= n {
			return nil, false
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither done nor %d sessions waiting after 30 s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// bookRaw writes a set and its two legs dated day, as the owner: in a
// month razao would not date a set in (far ahead), to put it in the
// DEFAULT partition.
func bookRaw(t *testing.T, db *sqlx.DB, key, day string) {
	t.Helper()
	db.MustExec(`WITH k AS (
		INSERT INTO posting_set_keys (idempotency_key, kind, competence, amount) VALUES ($1, 'adjustment', $2, 100) RETURNING id
	), s AS (
		INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		SELECT k.id, 'adjustment', $1, 100, 'BRL', $2, now(), 'x' FROM k RETURNING id, competence_month
	)
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, a.id, 'BRL', CASE a.code WHEN 'assets:cash' THEN 100 ELSE -100 END, s.competence_month
	FROM s, accounts a WHERE a.code IN ('assets:cash', 'equity:adjustments')`, key, day)
}

// The months' partitions made while a posting is made: the posting is
// never refused, and nothing deadlocks. The function used to take
// ACCESS EXCLUSIVE on posting_sets_default as it attached posting_sets'
// month, and on postings_default only later, for postings' month; a
// posting's statement trigger trg_postings_sealed_set, planned afresh (a
// new session), takes ACCESS SHARE on postings_default, then on
// posting_sets_default: a cycle, 40P01 (the console's adjustment got a
// 500). Each gate holds the function where the old order closed a cycle.
// Now the function takes its strong locks up front, in a posting's
// order, and gives up (ErrPartitionsBusy) within its lock_timeout, under
// deadlock_timeout, when a reader still closes one.
func TestMakingPartitionsNeverDeadlocksAPosting(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, posted, made error) {
		t.Helper()
		if posted != nil {
			t.Errorf("the posting made meanwhile: %v", posted)
		}
		if made != nil && !isBusy(made) {
			t.Errorf("the partitions: %v; want them made, or 55P03 (lock_timeout)", made)
		}
	}
	// The gate holds the name of postings' month table: the function
	// stops there, after posting_sets' month (which, before, held
	// posting_sets_default), and a posting starts in a new session.
	t.Run("a posting in a new session", func(t *testing.T) {
		t.Parallel()
		e := newPartitionsEnv(t)
		ctx := context.Background()
		now := time.Now()
		gate := e.session(t).MustBegin()
		defer gate.Rollback()
		gate.MustExec(fmt.Sprintf(`CREATE TABLE %s (x integer)`, partitionName("postings", e.first)))
		made := make(chan error, 1)
		go func() {
			_, err := e.ensure(ctx, e.db, e.first)
			made <- err
		}()
		madeErr, madeDone := e.doneOrWaiting(t, made, 1)
		sale, err := postings.Sale("ch-new-session", "BRL", 1000, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		ledger := postings.New(e.session(t), e.cal)
		posted := make(chan error, 1)
		go func() {
			_, err := ledger.Post(ctx, sale)
			posted <- err
		}()
		// Before, the posting waited for posting_sets_default (two
		// sessions waiting); now it does not wait at all.
		postErr, postDone := e.doneOrWaiting(t, posted, 2)
		gate.Rollback()
		if !madeDone {
			madeErr = <-made
		}
		if !postDone {
			postErr = <-posted
		}
		check(t, postErr, madeErr)
		// Whatever the first call did, the next one makes the month.
		if _, err := e.ensure(ctx, e.db, e.first); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"posting_sets", "postings"} {
			if !e.exists(t, partitionName(table, e.first)) {
				t.Errorf("no %s", partitionName(table, e.first))
			}
		}
	})
	// A transaction reads postings (ACCESS SHARE on postings_default),
	// the function waits for it, then it posts (an adjustment's approval
	// reads, then books): the posting waits for the function. The
	// function gives up, the posting goes on.
	t.Run("a transaction that reads postings, then posts", func(t *testing.T) {
		t.Parallel()
		e := newPartitionsEnv(t)
		ctx := context.Background()
		now := time.Now()
		reader := e.session(t)
		tx, err := reader.BeginTxx(ctx, periods.WriteTx())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM postings`); err != nil {
			t.Fatal(err)
		}
		made := make(chan error, 1)
		go func() {
			_, err := e.ensure(ctx, e.db, e.first)
			made <- err
		}()
		madeErr, madeDone := e.doneOrWaiting(t, made, 1)
		sale, err := postings.Sale("ch-read-then-post", "BRL", 1000, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		ledger := postings.New(reader, e.cal)
		posted := make(chan error, 1)
		go func() {
			_, err := ledger.PostTx(ctx, tx, sale)
			if err == nil {
				err = tx.Commit()
			}
			posted <- err
		}()
		postErr := <-posted
		if !madeDone {
			madeErr = <-made
		}
		check(t, postErr, madeErr)
		// postings_default was read until the posting's commit: the
		// function could not have it.
		if !isBusy(madeErr) {
			t.Errorf("the partitions: %v; want 55P03 (lock_timeout)", madeErr)
		}
	})
}

func isBusy(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "55P03"
}

// With nothing to make, ledger_ensure_month_partitions reads the catalog
// and returns 0 without a lock: while another session holds every table
// it could lock in ACCESS EXCLUSIVE mode, a call through a month made, a
// month of the past partition, or a month the DEFAULT partition keeps
// before the last month made, returns 0 and never waits. With something
// to make, it waits, and gives up within its lock_timeout.
func TestNothingToMakeTakesNoLock(t *testing.T) {
	t.Parallel()
	e := newPartitionsEnv(t)
	ctx := context.Background()
	m := func(n int) periods.Month {
		m := e.first
		for range n {
			m = m.Next()
		}
		return m
	}
	if _, err := e.ensure(ctx, e.db, m(1)); err != nil {
		t.Fatal(err)
	}
	// A set of month 3 before its partition: the DEFAULT partition keeps
	// it, and the month gets none; month 4 does.
	bookRaw(t, e.db, "in-default", m(3).First().AddDate(0, 0, 9).Format(time.DateOnly))
	if made, err := e.ensure(ctx, e.db, m(4)); err != nil || made != 4 {
		t.Fatalf("through %s: %d tables, %v; want 4 (months %s and %s)", m(4), made, err, m(2), m(4))
	}
	if e.exists(t, partitionName("posting_sets", m(3))) {
		t.Fatalf("%s made over the DEFAULT partition's rows", partitionName("posting_sets", m(3)))
	}
	gate := e.session(t).MustBegin()
	defer gate.Rollback()
	gate.MustExec(`LOCK TABLE posting_sets, postings, posting_sets_past, postings_past, posting_sets_default, postings_default
		IN ACCESS EXCLUSIVE MODE`)
	for _, through := range []periods.Month{e.first.Prev(), e.first, m(3), m(4)} {
		done := make(chan error, 1)
		go func() {
			made, err := e.ensure(ctx, e.db, through)
			if err == nil && made != 0 {
				err = fmt.Errorf("%d tables made", made)
			}
			done <- err
		}()
		if err, returned := e.doneOrWaiting(t, done, 1); !returned {
			t.Fatalf("through %s, nothing to make: waited for a lock", through)
		} else if err != nil {
			t.Errorf("through %s, nothing to make: %v; want 0 without a lock", through, err)
		}
	}
	if _, err := e.ensure(ctx, e.db, m(5)); !isBusy(err) {
		t.Errorf("through %s, while every table is locked: %v; want 55P03", m(5), err)
	}
}

// Several replicas' keepers (or a keeper and a close) at once: the calls
// take turns, each either makes what is missing or finds it made, or
// gives up (ErrPartitionsBusy); every table is made once.
func TestConcurrentCallsMakeEachPartitionOnce(t *testing.T) {
	t.Parallel()
	e := newPartitionsEnv(t)
	ctx := context.Background()
	now := e.first.First()
	results := make(chan [2]any, 3)
	for range cap(results) {
		go func() {
			made, err := periods.EnsurePartitions(ctx, e.db, periods.MonthOf(now), now)
			results <- [2]any{made, err}
		}()
	}
	total := 0
	for range cap(results) {
		r := <-results
		if err, _ := r[1].(error); err != nil && !errors.Is(err, periods.ErrPartitionsBusy) {
			t.Errorf("a call: %v", err)
		}
		total += r[0].(int)
	}
	if want := 2 * (periods.PartitionsAhead + 1); total != want {
		t.Errorf("%d tables made in all; want %d", total, want)
	}
}

// A close does not wait for the months' partitions: while a reader holds
// postings_default, the function gives up and the month is closed all
// the same; the next call makes them.
func TestACloseGoesOnWhenThePartitionsAreBusy(t *testing.T) {
	t.Parallel()
	e := newPartitionsEnv(t)
	ctx := context.Background()
	last := e.first.Prev()
	now := last.End(e.cal.Location()).Add(time.Hour)
	gate := e.session(t).MustBegin()
	defer gate.Rollback()
	gate.MustExec(`LOCK TABLE postings_default IN ACCESS SHARE MODE`)
	if err := periods.Close(ctx, e.db, e.cal, last, now, "", monthsums.Closing); err != nil {
		t.Fatalf("close %s while the partitions are busy: %v", last, err)
	}
	if closed := ledgertest.ClosedMonths(t, e.db); len(closed) != 1 || closed[0] != last {
		t.Fatalf("closed months %v; want %s", closed, last)
	}
	if e.exists(t, partitionName("posting_sets", e.first)) {
		t.Fatalf("%s made while postings_default was held", partitionName("posting_sets", e.first))
	}
	gate.Rollback()
	if made, err := periods.EnsurePartitions(ctx, e.db, last, now); err != nil || made != 2*periods.PartitionsAhead {
		t.Fatalf("after the reader: %d tables, %v; want %d", made, err, 2*periods.PartitionsAhead)
	}
}

type keeperRun struct {
	made int
	err  error
}

// runKeeper runs a keeper whose clock is now until the test ends, and
// returns what each of its attempts did.
func runKeeper(t *testing.T, e *partitionsEnv, now time.Time) <-chan keeperRun {
	t.Helper()
	runs := make(chan keeperRun, 1000)
	k := &periods.Keeper{DB: e.db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now },
		Every: time.Hour, Retry: time.Millisecond, Observe: func(made int, err error) { runs <- keeperRun{made, err} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return runs
}

// The keeper makes the months ahead as it starts, without a close: a
// ledger whose months stay open books each month in its own partition.
func TestTheKeeperMakesTheMonthsAheadAtStart(t *testing.T) {
	t.Parallel()
	e := newPartitionsEnv(t)
	now := e.first.First().Add(36 * time.Hour)
	r := <-runKeeper(t, e, now)
	if want := 2 * (periods.PartitionsAhead + 1); r.err != nil || r.made != want {
		t.Fatalf("the keeper's first run: %d tables, %v; want %d", r.made, r.err, want)
	}
	m := e.first
	for range periods.PartitionsAhead {
		m = m.Next()
	}
	if !e.exists(t, partitionName("postings", m)) || e.exists(t, partitionName("postings", m.Next())) {
		t.Errorf("the keeper made through %s? want %s and none after", m, partitionName("postings", m))
	}
}

// A keeper that finds the partitions busy tries again (a minute later in
// serve), and makes them once it can.
func TestTheKeeperTriesAgainWhenThePartitionsAreBusy(t *testing.T) {
	t.Parallel()
	e := newPartitionsEnv(t)
	gate := e.session(t).MustBegin()
	defer gate.Rollback()
	gate.MustExec(`LOCK TABLE postings_default IN ACCESS SHARE MODE`)
	runs := runKeeper(t, e, e.first.First())
	if r := <-runs; !errors.Is(r.err, periods.ErrPartitionsBusy) {
		t.Fatalf("the keeper's first run, postings_default held: %d tables, %v; want ErrPartitionsBusy", r.made, r.err)
	}
	gate.Rollback()
	for r := range runs {
		if errors.Is(r.err, periods.ErrPartitionsBusy) {
			continue // tried again before the gate's rollback reached it
		}
		if want := 2 * (periods.PartitionsAhead + 1); r.err != nil || r.made != want {
			t.Fatalf("the keeper's run after the reader: %d tables, %v; want %d", r.made, r.err, want)
		}
		break
	}
	if !e.exists(t, partitionName("postings", e.first)) {
		t.Errorf("no %s", partitionName("postings", e.first))
	}
}
