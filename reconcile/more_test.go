package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao"
	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/metrics"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reconcile"
)

// TestLineOfAClosedMonthIsBookedInTheFirstOpenMonth: a lost payment of a
// month already closed is booked by the delivery path in the first open
// month, keeping its own time.
func TestLineOfAClosedMonthIsBookedInTheFirstOpenMonth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("late1", 700, "")
	lastMonth := periods.MonthOf(goLive)
	if err := periods.Close(context.Background(), e.db, e.ledger.Calendar(), lastMonth, now, "", monthsums.Closing); err != nil {
		t.Fatal(err)
	}
	paidAt := goLive.Add(36 * time.Hour)
	file := "trackId,externalId,type,amount,date,refundId\ntrk-late,late1,DEPOSIT,7.00," + paidAt.Format(time.RFC3339) + ",\n"
	run, err := e.rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(file), time.Time{}, time.Time{})
	if err != nil || run.Booked != 1 {
		t.Fatalf("run %+v: %v", run, err)
	}
	var set struct {
		Month   time.Time `db:"competence_month"`
		EventAt time.Time `db:"event_at"`
	}
	e.drain()
	if err := e.db.Get(&set, `SELECT competence_month, event_at FROM posting_sets WHERE kind = 'sale' AND charge_id = 'late1'`); err != nil {
		t.Fatal(err)
	}
	if periods.MonthOf(set.Month) == lastMonth || !set.EventAt.Equal(paidAt) {
		t.Fatalf("booked in %s at %s; want the first open month, at %s", set.Month, set.EventAt, paidAt)
	}
}

// TestTempTablesNamedLikeOursAnswerForNothing: temporary tables named
// reconciliation_lines and charges on the reconciler's connection (pg_temp
// is searched first) neither take its lines nor answer its joins.
func TestTempTablesNamedLikeOursAnswerForNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.charge("tt1", 100, "")
	one, err := sqlx.Open("postgres", razao.DriverURL(e.url))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	one.SetMaxOpenConns(1)
	one.MustExec(`CREATE TEMP TABLE reconciliation_lines (LIKE reconciliation_lines INCLUDING ALL)`)
	one.MustExec(`CREATE TEMP TABLE charges (LIKE charges INCLUDING ALL)`)
	// In the shadow, tt1 is paid by this very payment: the line would match.
	one.MustExec(`INSERT INTO pg_temp.charges (id, amount, access, request_hash, state, paid_amount, fee, paid_ref, merchant)
		VALUES ('tt1', 100, 'x', 'h', 'paid', 100, 0, 'hodle:trk-tt1', 'loja-1')`)
	rec := e.reconcilerOn(one, fakeClientSecret, nil)
	file := "trackId,externalId,type,amount,date,refundId\ntrk-tt1,tt1,DEPOSIT,1.00," + at(1).Format(time.RFC3339) + ",\n"
	run, err := rec.ReconcileFile(context.Background(), "hodle", strings.NewReader(file), winFrom, winTo)
	if err != nil || run.Booked != 1 {
		t.Fatalf("run %+v: %v", run, err)
	}
	var shadow int
	one.Get(&shadow, `SELECT count(*) FROM pg_temp.reconciliation_lines`)
	if shadow != 0 || e.count(`SELECT count(*) FROM reconciliation_lines WHERE run_id = $1`, run.ID) != 1 || e.sales() != 1 {
		t.Fatalf("%d lines in the shadow table, %d sales", shadow, e.sales())
	}
}

// TestRunMetrics: runs by outcome, lines by outcome and the last final
// window, as Prometheus scrapes them.
func TestRunMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := metrics.New(e.db)
	rm, err := reconcile.NewMetrics(m, e.db)
	if err != nil {
		t.Fatal(err)
	}
	rec := e.reconcilerOn(e.db, fakeClientSecret, rm)
	e.charge("m1", 100, "")
	e.psp.add(pixItem{E2E: e2e(1), Txid: "m1", Valor: "1.00", Horario: at(1)}, pixItem{E2E: e2e(2), Txid: "zz", Valor: "1.00", Horario: at(2)})
	if _, err := rec.ReconcileWindow(context.Background(), "bcb", winFrom, winTo); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reconcilerOn(e.db, "wrong-secret", rm).ReconcileWindow(context.Background(), "bcb", winFrom, winTo); err == nil {
		t.Fatal("a run with a wrong secret succeeded")
	}
	rr := httptest.NewRecorder()
	m.Handler().ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rr.Body.String()
	prefix := `razao_reconciliation_last_final_window_end_seconds{endpoint="bcb"} `
	if i := strings.Index(body, prefix); i < 0 {
		t.Error("no last final window")
	} else if v, err := strconv.ParseFloat(strings.Fields(body[i+len(prefix):])[0], 64); err != nil || int64(v) != winTo.Unix() {
		t.Errorf("last final window %v, want %d", v, winTo.Unix())
	}
	for _, want := range []string{
		`razao_reconciliation_runs_total{endpoint="bcb",outcome="succeeded"} 1`,
		`razao_reconciliation_runs_total{endpoint="bcb",outcome="failed"} 1`,
		`razao_reconciliation_lines_total{endpoint="bcb",outcome="booked"} 1`,
		`razao_reconciliation_lines_total{endpoint="bcb",outcome="divergence"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(float64(n))
	return string(b)
}

// apiEnv serves the /v1 routes over the env with a token of each scope.
func apiEnv(e *env) (http.Handler, map[auth.Scope]string) {
	e.t.Helper()
	a := &api.API{DB: e.db, Ledger: e.ledger, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }, Reconciler: e.rec}
	r := mux.NewRouter()
	a.Register(r)
	tokens := map[auth.Scope]string{}
	for _, s := range []auth.Scope{auth.Read, auth.Write, auth.Admin} {
		tok, _, err := auth.Create(context.Background(), e.db, "t-"+string(s), []auth.Scope{s})
		if err != nil {
			e.t.Fatal(err)
		}
		tokens[s] = tok
	}
	return r, tokens
}

func call(h http.Handler, method, target, token, ctype string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	return rr
}

// TestReconciliationsAPI: uploads need the admin scope, text/csv and a
// body within the endpoint's max_file_bytes; a run lists its unmatched
// lines page by page, and its lines as CSV with formula cells guarded.
func TestReconciliationsAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.cfgs[1].MaxFileBytes = 2048
	e.rec = e.reconciler(fakeClientSecret)
	h, tok := apiEnv(e)
	e.charge("a1", 100, "")
	ts := at(1).Format(time.RFC3339)
	file := []byte("trackId,externalId,type,amount,date,refundId\n" +
		"t1,a1,DEPOSIT,1.00," + ts + ",\n" +
		"t2,\"=HYPERLINK(\"\"x\"\")\",DEPOSIT,1.00," + ts + ",\n" +
		"t3,nope,DEPOSIT,1.00," + ts + ",\n")
	upload := "/v1/reconciliations?endpoint=hodle&from=" + winFrom.Format(time.RFC3339) + "&to=" + winTo.Format(time.RFC3339)
	for _, s := range []auth.Scope{auth.Read, auth.Write} {
		// A write token is the selling app's: it must not book money no
		// PSP announced.
		if rr := call(h, "POST", upload, tok[s], "text/csv", file); rr.Code != http.StatusForbidden {
			t.Fatalf("upload with a %s token: %d", s, rr.Code)
		}
	}
	if rr := call(h, "POST", upload, tok[auth.Admin], "application/json", file); rr.Code != http.StatusUnsupportedMediaType {
		t.Fatalf("upload as JSON: %d", rr.Code)
	}
	if rr := call(h, "POST", upload, tok[auth.Admin], "text/csv", bytes.Repeat(file, 20)); rr.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("upload over max_file_bytes: %d %s", rr.Code, rr.Body)
	}
	if rr := call(h, "POST", "/v1/reconciliations?endpoint=bcb", tok[auth.Admin], "text/csv", file); rr.Code != http.StatusNotFound {
		t.Fatalf("upload for a bcb-pix endpoint: %d", rr.Code)
	}
	if rr := call(h, "POST", "/v1/reconciliations?endpoint=hodle&from=yesterday&to="+winTo.Format(time.RFC3339), tok[auth.Admin], "text/csv", file); rr.Code != http.StatusBadRequest {
		t.Fatalf("upload with a bad window: %d", rr.Code)
	}
	rr := call(h, "POST", upload, tok[auth.Admin], "text/csv", file)
	var run reconcile.Run
	if rr.Code != http.StatusCreated || json.Unmarshal(rr.Body.Bytes(), &run) != nil || run.Lines != 3 || run.Booked != 1 || run.Divergences != 2 {
		t.Fatalf("upload: %d %s", rr.Code, rr.Body)
	}
	var d api.RunDetail
	rr = call(h, "GET", "/v1/reconciliations/"+jsonNumber(run.ID)+"?limit=2", tok[auth.Read], "", nil)
	if json.Unmarshal(rr.Body.Bytes(), &d); len(d.Unmatched) != 2 || d.NextAfter == nil {
		t.Fatalf("first page: %d %s", rr.Code, rr.Body)
	}
	rr = call(h, "GET", "/v1/reconciliations/"+jsonNumber(run.ID)+"?limit=2&after="+jsonNumber(*d.NextAfter), tok[auth.Read], "", nil)
	d = api.RunDetail{}
	if json.Unmarshal(rr.Body.Bytes(), &d); len(d.Unmatched) != 1 || d.NextAfter != nil || d.Unmatched[0].Line != 3 {
		t.Fatalf("second page: %d %s", rr.Code, rr.Body)
	}
	var page api.RunPage
	rr = call(h, "GET", "/v1/reconciliations?endpoint=hodle", tok[auth.Read], "", nil)
	// The oversized upload left a failed run; the refused ones none.
	if json.Unmarshal(rr.Body.Bytes(), &page); len(page.Runs) != 2 || page.Runs[0].ID != run.ID || page.Runs[1].Status != "failed" {
		t.Fatalf("runs: %s", rr.Body)
	}
	rr = call(h, "GET", "/v1/reconciliations/"+jsonNumber(run.ID)+"/lines.csv?dialect=br", tok[auth.Read], "", nil)
	csv := rr.Body.String()
	if rr.Code != 200 || !strings.HasPrefix(csv, "\xEF\xBB\xBFline;side;") || !strings.Contains(csv, `;"'=HYPERLINK(""x"")";`) ||
		!strings.Contains(csv, ";1,00;") || strings.Count(csv, "\r\n") != 4 {
		t.Fatalf("lines csv: %d\n%s", rr.Code, csv)
	}
	if rr := call(h, "GET", "/v1/reconciliations/999", tok[auth.Read], "", nil); rr.Code != http.StatusNotFound {
		t.Fatalf("unknown run: %d", rr.Code)
	}
}
