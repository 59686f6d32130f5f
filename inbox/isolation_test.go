package inbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// With default_transaction_isolation = serializable on the database, a
// delivery that waits on its charge's lock while its month is closed is
// booked in the first open month: posting transactions state READ
// COMMITTED, so the statement that books reads the close it waited for,
// not the snapshot it started with.
func TestDeliveryWaitingThroughACloseUnderSerializableDefaultLandsInTheOpenMonth(t *testing.T) {
	t.Parallel()
	owner, url := pgtest.NewWithURL(t)
	var name string
	owner.Get(&name, `SELECT current_database()`)
	owner.MustExec(fmt.Sprintf(`ALTER DATABASE %s SET default_transaction_isolation = 'serializable'`, pq.QuoteIdentifier(name)))
	db, err := razao.Open(context.Background(), url) // new sessions take the new default
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var level string
	db.Get(&level, `SHOW transaction_isolation`)
	if level != "serializable" {
		t.Fatalf("the database's default is %q, want serializable", level)
	}

	e := newEnvWithDB(t, db, url)
	e.Charge("order-1", 4990, "partner-42", 1000)
	gate := e.HoldCharge("order-1")
	done := make(chan reply, 1)
	go func() {
		done <- e.PostStandard("msg-1", "charge.paid", map[string]any{"charge_id": "order-1", "amount": 4990, "occurred_at": clock.Format(time.RFC3339)})
	}()
	e.WaitSnoozed(1)

	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	month := periods.MonthOf(cal.Date(clock))
	if err := periods.Close(context.Background(), db, cal, month, clock.AddDate(0, 2, 0), "", monthsums.Closing); err != nil {
		t.Fatalf("close %s while the delivery waits: %v", month, err)
	}
	gate.Rollback()
	if r := <-done; r.Code != 200 {
		t.Fatalf("delivery: %d %+v", r.Code, r.Body)
	}
	e.Settled()
	var sets []struct {
		Kind  string    `db:"kind"`
		Month time.Time `db:"competence_month"`
		Event time.Time `db:"event_at"`
	}
	if err := db.Select(&sets, `SELECT kind, competence_month, event_at FROM posting_sets ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("%d posting sets, want the sale and its commission", len(sets))
	}
	for _, s := range sets {
		if got := periods.MonthOf(s.Month); got != month.Next() {
			t.Errorf("%s booked in %s, want %s, the first open month", s.Kind, got, month.Next())
		}
		if !s.Event.Equal(clock) {
			t.Errorf("%s event_at %s, want the original %s", s.Kind, s.Event, clock)
		}
	}
}

// A session at REPEATABLE READ or SERIALIZABLE whose snapshot predates a
// close cannot book into the closed month; the database refuses posting
// sets at any level but READ COMMITTED.
func TestDatabaseRefusesPostingSetsOutsideReadCommitted(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	l := postings.New(db, cal)
	month := periods.MonthOf(cal.Date(clock))
	for _, level := range []string{"SERIALIZABLE", "REPEATABLE READ"} {
		t.Run(level, func(t *testing.T) {
			tx := db.MustBegin()
			defer tx.Rollback()
			tx.MustExec(`SET TRANSACTION ISOLATION LEVEL ` + level)
			tx.MustExec(`SELECT count(*) FROM closed_periods`) // the snapshot is taken here
			if level == "SERIALIZABLE" {
				if err := periods.Close(context.Background(), db, l.Calendar(), month, clock.AddDate(0, 2, 0), "", monthsums.Closing); err != nil {
					t.Fatalf("close: %v", err)
				}
			}
			err := rawBalancedSet(tx, cal.Date(clock))
			if err == nil {
				err = tx.Commit()
			}
			if err == nil {
				t.Fatalf("a posting set was committed at %s", level)
			}
		})
	}
	var n int
	db.Get(&n, `SELECT count(*) FROM posting_sets`)
	if n != 0 {
		t.Fatalf("%d posting sets written", n)
	}
}

// rawBalancedSet writes a balanced adjustment with plain SQL.
func rawBalancedSet(tx *sqlx.Tx, day time.Time) error {
	_, err := tx.Exec(`WITH s AS (
		INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', 'raw-1', 100, 'BRL', $1, now(), 'x') RETURNING id, competence_month)
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, a.id, 'BRL', CASE a.code WHEN 'assets:cash' THEN 100 ELSE -100 END, s.competence_month
	FROM s, accounts a WHERE a.code IN ('assets:cash', 'equity:adjustments')`, day)
	return err
}
