package inbox_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/webhook"
	"github.com/razao/razao/webhook/scheme"
)

// TestEventWindowIsTheSchemeToleranceAndFiveMinutes ties the ledger's
// upper bound to the schemes' timestamp tolerance: an event the PSP dated
// by its own clock, a little ahead of ours, is never refused.
func TestEventWindowIsTheSchemeToleranceAndFiveMinutes(t *testing.T) {
	t.Parallel()
	if periods.MaxAhead != scheme.TimestampTolerance+5*time.Minute {
		t.Fatalf("periods.MaxAhead = %v, want the schemes' %v plus 5 minutes", periods.MaxAhead, scheme.TimestampTolerance)
	}
}

// newWindowEnv is newEnv with the two schemes that carry an event time,
// standard (data.occurred_at) and bcb-pix (horario, horario.liquidacao).
func newWindowEnv(t *testing.T) *env {
	t.Helper()
	db, url := pgtest.NewWithURL(t)
	return newEnvWithEndpoints(t, db, url,
		webhook.EndpointConfig{Name: "std", Scheme: "standard", Merchant: "loja-1", Secrets: []string{standardSecret}},
		webhook.EndpointConfig{Name: "bcb", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{bcbSecret}})
}

// windowDelivery builds one signed delivery of a scheme whose event time
// is at; n makes its ids unique.
type windowDelivery func(e *env, n int, charge, at string) reply

func stdPaidAt(e *env, n int, charge, at string) reply {
	body := fmt.Sprintf(`{"type":"charge.paid","timestamp":%q,"data":{"charge_id":%q,"amount":4990,"occurred_at":%q}}`,
		clock.UTC().Format(time.RFC3339), charge, at)
	return e.Post("/webhooks/std", standardHeaders(fmt.Sprintf("msg-%d", n), clock.Unix(), []byte(body)), []byte(body))
}

func bcbPost(e *env, body string) reply {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return e.Post("/webhooks/bcb?hmac="+bcbSecret, h, []byte(body))
}

func e2e(n int) string { return fmt.Sprintf("E%031d", n) }

func bcbPaidAt(e *env, n int, charge, at string) reply {
	return bcbPost(e, fmt.Sprintf(`{"pix":[{"endToEndId":%q,"txid":%q,"valor":"49.90","horario":%q}]}`, e2e(n), charge, at))
}

// bcbRefundAt is a credit inside the window whose devolução settled at at.
func bcbRefundAt(e *env, n int, charge, at string) reply {
	ok := clock.Add(-time.Hour).UTC().Format(time.RFC3339)
	return bcbPost(e, fmt.Sprintf(`{"pix":[{"endToEndId":%q,"txid":%q,"valor":"49.90","horario":%q,
		"devolucoes":[{"id":"D%d","rtrId":"R%d","valor":"10.00","horario":{"solicitacao":%q,"liquidacao":%q},"status":"DEVOLVIDO"}]}]}`,
		e2e(n), charge, ok, n, n, ok, at))
}

// TestDeliveriesOutsideTheEventWindowAreMalformedAndKept: for every
// scheme that carries an event time, a delivery dated before go-live, in
// the year 0000 or 9999, at an offset of −20:00, or an hour ahead of our
// clock is answered 400, kept in the inbox with a malformed divergence,
// and books nothing; one inside the window is booked, and the month can
// then be closed (an event booked in 0001-01 would hold every close back
// forever).
func TestDeliveriesOutsideTheEventWindowAreMalformedAndKept(t *testing.T) {
	t.Parallel()
	e := newWindowEnv(t)
	ctx := context.Background()
	outside := []struct{ name, at string }{
		{"0001-01-01", "0001-01-01T00:00:00Z"},
		{"0001-01-01 in São Paulo", "0001-01-01T00:00:00-03:00"},
		{"1899-12-31", "1899-12-31T12:00:00Z"},
		{"9999-12-31", "9999-12-31T23:59:59Z"},
		{"year 0000", "0000-06-01T00:00:00Z"},
		{"offset -20:00", clock.UTC().Format("2006-01-02T15:04:05") + "-20:00"},
		{"go-live minus a day", "2020-10-31T12:00:00-03:00"},
		{"now + 1 hour", clock.Add(time.Hour).UTC().Format(time.RFC3339)},
	}
	// A bcb-pix callback is judged item by item: the Pix or devolução
	// dated outside is a malformed divergence of its own, answered 200,
	// and the rest is booked (the credit of a devolução settled outside).
	schemes := []struct {
		name    string
		send    windowDelivery
		perItem bool
		sets    int64
	}{{"standard", stdPaidAt, false, 0}, {"bcb-pix horario", bcbPaidAt, true, 0}, {"bcb-pix liquidacao", bcbRefundAt, true, 1}}
	var booked int64
	n := 0
	for _, s := range schemes {
		for _, tc := range outside {
			n++
			charge := fmt.Sprintf("ch%d", n)
			e.Charge(charge, 4990, "", 0)
			divsBefore := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`)
			kept := `SELECT count(*) FROM inbox WHERE event_type = 'malformed' AND status = 'divergent'`
			wantCode, wantStatus := http.StatusBadRequest, "malformed"
			if s.perItem {
				kept = `SELECT count(*) FROM inbox WHERE kind = 'unbookable' AND status = 'divergent'`
				wantCode, wantStatus = http.StatusOK, "accepted"
			}
			keptBefore := e.Count(kept)
			r := s.send(e, n, charge, tc.at)
			if r.Code != wantCode || r.Body.Status != wantStatus {
				t.Errorf("%s %s: %d %+v, want %d %s", s.name, tc.name, r.Code, r.Body, wantCode, wantStatus)
			}
			if got := e.Count(kept) - keptBefore; got != 1 {
				t.Errorf("%s %s: %d deliveries kept as malformed, want 1", s.name, tc.name, got)
			}
			if got := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`) - divsBefore; got != 1 {
				t.Errorf("%s %s: %d malformed divergences opened, want 1", s.name, tc.name, got)
			}
			if got := e.Count(`SELECT count(*) FROM posting_sets WHERE charge_id = $1`, charge); got != s.sets {
				t.Errorf("%s %s: %d posting sets booked, want %d", s.name, tc.name, got, s.sets)
			}
			booked += s.sets
		}
	}
	if got := e.Count(`SELECT count(*) FROM posting_sets WHERE kind <> 'sale' OR event_at < '2026-01-01'`); got != 0 || booked != 8 {
		t.Fatalf("%d posting sets booked from deliveries outside the window", got)
	}
	if got := e.Count(`SELECT count(*) FROM inbox WHERE status = 'pending'`); got != 0 {
		t.Fatalf("%d deliveries left pending to fail again and again", got)
	}

	// Inside the window: booked, through both schemes.
	e.Charge("chin1", 4990, "", 0)
	e.Charge("chin2", 4990, "", 0)
	at := clock.Add(-time.Hour).UTC().Format(time.RFC3339)
	if r := stdPaidAt(e, 1001, "chin1", at); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("standard inside the window: %d %+v", r.Code, r.Body)
	}
	if r := bcbRefundAt(e, 1002, "chin2", at); r.Code != 200 || r.Body.Status != "accepted" {
		t.Fatalf("bcb-pix inside the window: %d %+v", r.Code, r.Body)
	}
	if got := e.Count(`SELECT count(*) FROM posting_sets WHERE charge_id IN ('chin1', 'chin2')`); got != 3 {
		t.Fatalf("%d sets booked inside the window, want 2 sales and a refund", got)
	}
	// Edge: go-live itself, midnight in São Paulo, is inside.
	e.Charge("chin3", 4990, "", 0)
	if r := stdPaidAt(e, 1003, "chin3", "2020-11-01T00:00:00-03:00"); r.Code != 200 {
		t.Fatalf("at go-live: %d %+v", r.Code, r.Body)
	}

	// Every month from go-live's to the clock's can be closed in turn.
	last := periods.Month{Year: 2026, Month: time.September}
	for m := (periods.Month{Year: 2020, Month: time.November}); !last.Before(m); m = m.Next() {
		if err := periods.Close(ctx, e.DB, e.Applier.Ledger.Calendar(), m, clock.AddDate(0, 1, 0), "", monthsums.Closing); err != nil {
			t.Fatalf("close %s after deliveries outside the window: %v", m, err)
		}
	}
	var months []time.Time
	if err := e.DB.Select(&months, `SELECT DISTINCT competence_month FROM posting_sets ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	if len(months) != 2 {
		t.Errorf("sets booked in months %v, want 2020-11 and 2026-09", months)
	}
}

// TestStoredDeliveryOutsideTheWindowIsADivergenceAtOnce: a delivery stored
// before intake checked the window (here written straight into the inbox)
// becomes a malformed divergence on its first attempt instead of failing
// ten times.
func TestStoredDeliveryOutsideTheWindowIsADivergenceAtOnce(t *testing.T) {
	t.Parallel()
	e := newWindowEnv(t)
	for i, at := range []string{"0001-06-01T00:00:00Z", "2026-09-22T10:00:00-20:00", "9999-12-31T00:00:00Z"} {
		charge := fmt.Sprintf("old%d", i)
		e.Charge(charge, 4990, "", 0)
		ev := fmt.Sprintf(`{"Kind":"paid","Type":"charge.paid","EventID":%q,"ChargeID":%q,"Amount":4990,"HasAmount":true,"OccurredAt":%q}`, charge, charge, at)
		e.DB.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, headers, status)
			VALUES ($1, 'std', 'standard', 'loja-1', 'charge.paid', $2, 'paid', $2, $3::jsonb, '\x7b7d', '{}', 'pending')`,
			"std|charge.paid|"+charge, charge, ev)
	}
	if _, err := inbox.NewWorker(e.Proc, time.Second).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'divergent' AND attempts <= 1`); n != 3 {
		t.Errorf("%d of 3 stored deliveries divergent after one attempt", n)
	}
	if n := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`); n != 3 {
		t.Errorf("%d malformed divergences, want 3", n)
	}
	if n := e.Count(`SELECT count(*) FROM posting_sets`); n != 0 {
		t.Errorf("%d sets booked", n)
	}
}
