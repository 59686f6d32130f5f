package charges_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
)

// benchCharges is the listing benchmark's size.
const benchCharges = 2_000_000

// BenchmarkFind measures a first page (100) of GET /v1/charges for each
// filter on 2 million charges and their 1.8 million deliveries
// (benchledger.Charges: a page of a rare state, of one merchant of 50, of
// a partner of 500, a day, a month, an amount, each reference), and a
// page deep into the listing by cursor. Building them takes a few minutes,
// so it runs only when RAZAO_BENCH_CHARGES is set:
//
//	RAZAO_BENCH_CHARGES=1 go test -run '^$' -bench Find -benchtime 50x ./charges/
//
// RAZAO_BENCH_DB=<database name> builds into that database on the test
// server and keeps it, reused on the next run.
func BenchmarkFind(b *testing.B) {
	if os.Getenv("RAZAO_BENCH_CHARGES") == "" {
		b.Skip("set RAZAO_BENCH_CHARGES=1 to build 2 million charges and measure the listing")
	}
	db := benchChargesDB(b)
	ctx := context.Background()
	day := benchledger.ChargeCreated(1_500_000)
	month := day.AddDate(0, -1, 0)
	g := 1_500_001 // paid through bcb-pix
	cases := []struct {
		name string
		f    charges.Filter
	}{
		{"none", charges.Filter{}},
		{"state=paid", charges.Filter{State: charges.StatePaid}},
		{"state=failed", charges.Filter{State: charges.StateFailed}},
		{"merchant", charges.Filter{Merchant: "m-7"}},
		{"partner", charges.Filter{Partner: "p-42"}},
		{"created-day", charges.Filter{CreatedFrom: ptr(day), CreatedTo: ptr(day.Add(24 * time.Hour))}},
		{"created-month", charges.Filter{CreatedFrom: ptr(month), CreatedTo: ptr(day)}},
		{"paid-day", charges.Filter{PaidFrom: ptr(day), PaidTo: ptr(day.Add(24 * time.Hour))}},
		{"paid-month", charges.Filter{PaidFrom: ptr(month), PaidTo: ptr(day)}},
		{"amount-one", charges.Filter{AmountMin: ptr(int64(4990)), AmountMax: ptr(int64(4990))}},
		{"amount-wide", charges.Filter{AmountMin: ptr(int64(10_000)), AmountMax: ptr(int64(20_000))}},
		{"txid", charges.Filter{TxID: fmt.Sprintf("ch-%d", g)}},
		{"end_to_end_id", charges.Filter{EndToEndID: fmt.Sprintf("E%d", g)}},
		{"track_id", charges.Filter{TrackID: fmt.Sprintf("track-%d", g-1)}},
		{"webhook_id", charges.Filter{WebhookID: fmt.Sprintf("msg_%d", g+1)}},
		{"state+merchant+month", charges.Filter{State: charges.StatePending, Merchant: "m-12", CreatedFrom: ptr(month), CreatedTo: ptr(day)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := charges.Find(ctx, db, inbox.ChargeRefs{}, c.f, nil, 100); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("page-deep-by-cursor", func(b *testing.B) {
		after := &charges.Position{At: benchledger.ChargeCreated(1_000_000), ID: "ch-1000000"}
		for b.Loop() {
			if _, err := charges.Find(ctx, db, inbox.ChargeRefs{}, charges.Filter{State: charges.StateRefunded}, after, 100); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchChargesDB is a database holding benchCharges charges: a fresh one,
// or RAZAO_BENCH_DB's, built once.
func benchChargesDB(b *testing.B) *sqlx.DB {
	b.Helper()
	db, _ := pgtest.KeptDatabase(b, func(db *sqlx.DB) bool {
		var n int64
		db.Get(&n, `SELECT count(*) FROM charges`)
		return n > 0
	}, func(db *sqlx.DB) { benchledger.Charges(b, db, benchCharges) })
	return db
}
