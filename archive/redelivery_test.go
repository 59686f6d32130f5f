package archive

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/razao/razao/internal/deliverytest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/verify"
)

// After the body of a booked payment is archived and purged, the PSP's
// redelivery of it is still a duplicate, nothing is booked twice, and
// razao verify finds the ledger clean.
func TestRedeliveryAfterPurgeIsADuplicateAndVerifyIsClean(t *testing.T) {
	t.Parallel()
	e := deliverytest.New(t)
	e.Charge("order-1", 4990, "partner-42", 1000)
	body := deliverytest.HodlePaid("track-1", "order-1", "49.90")
	if r := e.PostHodle(body); r.Code != http.StatusOK || r.Body.Status != "accepted" {
		t.Fatalf("first delivery: %+v", r)
	}
	e.Drain()
	// Booked in September 2026 (the front's clock); the month is closed
	// with its snapshot, as razao period close does, and the delivery
	// was processed then.
	ctx := context.Background()
	cal, err := periods.NewCalendar("America/Sao_Paulo")
	if err != nil {
		t.Fatal(err)
	}
	e.DB.MustExec(`UPDATE inbox SET processed_at = '2026-09-22 12:00-03'`)
	if err := periods.Close(ctx, e.DB, cal, periods.Month{Year: 2026, Month: time.September}, time.Date(2026, 10, 2, 0, 0, 0, 0, time.UTC),
		"test", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	a := newArchiver(t, e.DB)
	s := run(t, a)
	if len(s.Files) < 1 || s.Files[0].Kind != InboxBodies || s.Files[0].Month != "2026-09" || s.Files[0].Rows != 1 {
		t.Fatalf("files %+v, want the September delivery's body first", s.Files)
	}
	if n := count(t, e.DB, `SELECT count(*) FROM inbox WHERE body IS NOT NULL OR body_id IS NOT NULL`); n != 0 {
		t.Fatalf("%d bodies left", n)
	}
	sets := count(t, e.DB, `SELECT count(*) FROM posting_sets`)
	if r := e.PostHodle(body); r.Code != http.StatusOK || r.Body.Status != "duplicate" {
		t.Fatalf("redelivery after the purge: %+v, want a duplicate", r)
	}
	e.Drain()
	if n := count(t, e.DB, `SELECT count(*) FROM posting_sets`); n != sets {
		t.Fatalf("%d posting sets after the redelivery, %d before", n, sets)
	}
	r, err := verify.Run(ctx, e.DB)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatalf("verify after the purge: %+v", r)
	}
}
