package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// insertLegacySet writes a balanced adjustment on date d straight in SQL,
// as code without the event-time window could.
func insertLegacySet(t *testing.T, db *sqlx.DB, key, d string) {
	t.Helper()
	db.MustExec(`WITH s AS (
		INSERT INTO posting_sets (kind, idempotency_key, amount, currency, competence, event_at, content_hash)
		VALUES ('adjustment', $1, 100, 'BRL', $2::date, $2::date, 'legacy') RETURNING id, competence_month)
	INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
	SELECT s.id, a.id, 'BRL', v.amount, s.competence_month
	FROM s, (VALUES ('assets:cash', 100), ('income:revenue', -100)) v (code, amount) JOIN accounts a ON a.code = v.code`, key, d)
}

// TestPeriodsStayBoundedOnALedgerWithOldSets: sets dated 0001-01 and
// 9999-12 (written before the ledger refused them) do not stretch
// /v1/periods over 119,988 months, and do not keep the first real month
// from closing through the API.
func TestPeriodsStayBoundedOnALedgerWithOldSets(t *testing.T) {
	t.Parallel()
	h, token, db := newAPI(t) // its clock: 2026-09-02
	insertLegacySet(t, db, "legacy-0001", "0001-01-01")
	insertLegacySet(t, db, "legacy-1899", "1899-12-31")
	insertLegacySet(t, db, "legacy-9999", "9999-12-31")
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	sale, _ := postings.Sale("c1", "BRL", 4990, 0, time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC))
	if _, err := postings.New(db, cal).Post(context.Background(), sale); err != nil {
		t.Fatal(err)
	}
	periods := func() []string {
		t.Helper()
		code, m, _ := call(t, h, "GET", "/v1/periods", token, "")
		ps, _ := m["periods"].([]any)
		if code != 200 {
			t.Fatalf("periods: %d %v", code, m)
		}
		var got []string
		for _, p := range ps {
			p := p.(map[string]any)
			got = append(got, p["month"].(string)+" "+p["status"].(string))
		}
		return got
	}
	got := periods()
	if want := []string{"2026-07 open", "2026-08 open", "2026-09 open"}; strings.Join(got, ",") != strings.Join(want, ",") {
		n := len(got)
		if n > 5 {
			got = append(got[:5], "...")
		}
		t.Fatalf("periods %d months %q, want %q", n, got, want)
	}
	if code, m, _ := call(t, h, "POST", "/v1/periods/2026-07/close", token, ""); code != 200 {
		t.Fatalf("close 2026-07 beside sets of 0001 and 9999: %d %v", code, m)
	}
	if code, m, _ := call(t, h, "POST", "/v1/periods/2020-10/close", token, ""); code != 400 || !strings.HasSuffix(m["type"].(string), "/invalid-parameter") {
		t.Fatalf("close a month before go-live: %d %v, want 400", code, m)
	}
	if got := periods(); got[0] != "2026-07 closed" || len(got) != 3 {
		t.Fatalf("periods after the close: %q", got)
	}
}

// TestPayoutOutsideTheWindowIs400: a payout the ledger would date before
// go-live (a server clock gone wrong) is refused with 400 and books
// nothing.
func TestPayoutOutsideTheWindowIs400(t *testing.T) {
	t.Parallel()
	h, token, db := newAPIWith(t, apiOptions{now: func() time.Time { return time.Date(2020, 10, 31, 12, 0, 0, 0, time.UTC) }, unchecked: true})
	if code, m := payout(t, h, token, "po-1", `{"amount":100,"allow_over_owed":true}`); code != 400 || !strings.Contains(m["detail"].(string), "go-live") {
		t.Fatalf("payout dated before go-live: %d %v, want 400", code, m)
	}
	if n := 0; db.Get(&n, `SELECT count(*) FROM posting_sets`) != nil || n != 0 {
		t.Fatalf("%d sets booked", n)
	}
}
