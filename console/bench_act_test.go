package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/divergences"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reconcile"
	"github.com/razao/razao/webhook"
)

// benchActEndpoint is the statement endpoint of the action pages'
// benchmark: its run, and the divergences the run opened, are the
// benchmark's own rows on the kept ledger (reconciliation_runs.endpoint,
// divergences.endpoint).
const benchActEndpoint = "bench-act"

// The run's statement: benchActLines lines, of which benchActMismatch
// pay a known charge another amount and benchActUnknown pay no charge
// razao knows; each of those opens a divergence that offers bookings.
const (
	benchActLines    = 10_000
	benchActMismatch = 100
	benchActUnknown  = 100
	benchActOpen     = benchActMismatch + benchActUnknown
)

// benchActFirstCharge is where the statement's charges start
// (benchledger.Charges' ch-<g>), away from the charge the find
// benchmarks open (g = 4/5 of the charges).
const benchActFirstCharge = 300_000

// benchActAdjustments proposals are made, the first benchActBooked of
// them approved and booked (in 2025-12, an open month).
const (
	benchActAdjustments = 300
	benchActBooked      = 200
)

// BenchmarkActPages measures the pages of the console that act on the
// books on the find benchmarks' ledger (BenchmarkFindPages: about 10
// million postings, 500,000 charges), after adding to it, once, the
// benchmark's own rows: a reconciliation run of a 10,000-line statement
// of endpoint bench-act through the reconciler (its 200 divergences are
// the open divergences the divergences page describes), 300 adjustments
// keyed bench-act-adj-N (200 booked), the month sums and benchDelta
// sales beyond them. The divergences page is measured with 50 open (the
// run's others set aside as resolved by a note) and with 200, which it
// leaves open. Each page is first checked to show what it is asked for.
//
//	RAZAO_BENCH_ACT=1 RAZAO_BENCH_DB=razao_console_find_bench \
//	  go test -run '^$' -bench ActPages -benchtime 20x ./console/
func BenchmarkActPages(b *testing.B) {
	if os.Getenv("RAZAO_BENCH_ACT") == "" {
		b.Skip("set RAZAO_BENCH_ACT=1 (and RAZAO_BENCH_DB to a kept ledger) to measure the divergences, adjustments, partner, reconciliation, month and chart pages")
	}
	sales := benchEnvInt(b, "RAZAO_CONSOLE_BENCH_SALES", 2_375_000)
	nCharges := benchEnvInt(b, "RAZAO_CONSOLE_BENCH_CHARGES", 500_000)
	if nCharges < benchActFirstCharge+4*benchActLines {
		b.Skipf("the statement needs charges up to ch-%d: set RAZAO_CONSOLE_BENCH_CHARGES higher", benchActFirstCharge+4*benchActLines)
	}
	db, dbURL := pgtest.KeptDatabase(b, func(db *sqlx.DB) bool {
		var built bool
		db.Get(&built, `SELECT EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1) AND EXISTS (SELECT 1 FROM charges)`,
			benchledger.LastClosed.First())
		return built
	}, func(db *sqlx.DB) {
		benchledger.Build(b, db, sales, benchPartners)
		benchledger.Charges(b, db, nCharges)
	})
	e := newBenchAct(b, db, dbURL)
	run := e.statementRun(b)
	e.adjustmentsQueue(b)
	e.monthSums(b)
	e.logSizes(b, run)

	get := func(path string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(e.cookie)
		rec := httptest.NewRecorder()
		e.router.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	// link is the href of the first link of page that re matches.
	link := func(page string, re *regexp.Regexp) string {
		m := re.FindStringSubmatch(page)
		if m == nil {
			b.Fatalf("no link %s on the page", re)
		}
		return htmlUnescape(m[1])
	}
	type page struct{ name, path, want string }
	measure := func(p page, check func(body string) error) {
		b.Helper()
		code, body := get(p.path)
		if code != http.StatusOK || !strings.Contains(body, p.want) {
			b.Fatalf("%s: %d, without %s\n%.3000s", p.path, code, p.want, body)
		}
		if check != nil {
			if err := check(body); err != nil {
				b.Fatalf("%s: %v\n%.3000s", p.path, err, body)
			}
		}
		b.Logf("%s: %d bytes", p.name, len(body))
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				if code, _ := get(p.path); code != http.StatusOK {
					b.Fatalf("%s: %d", p.path, code)
				}
			}
		})
	}
	// count wants n of s on the page.
	count := func(s string, n int) func(string) error {
		return func(body string) error {
			if got := strings.Count(body, s); got != n {
				return fmt.Errorf("%d of %s, want %d", got, s, n)
			}
			return nil
		}
	}

	// The divergences page describes each open divergence of its page
	// (pageSize of them): with 50 open, then with 200 (four pages).
	openRow := `data-status="open"`
	e.openDivergences(b, pageSize)
	measure(page{"divergences/50-open", "/console/divergences", `data-resolution="`}, count(openRow, pageSize))
	e.openDivergences(b, benchActOpen)
	_, first := get("/console/divergences")
	nextOpen := regexp.MustCompile(`href="(/console/divergences\?open=[^"]*)"`)
	last := link(first, nextOpen)
	for range benchActOpen/pageSize - 2 {
		_, pg := get(last)
		last = link(pg, nextOpen)
	}
	measure(page{"divergences/200-open-page-1", "/console/divergences", `data-resolution="`}, count(openRow, pageSize))
	// What the page spends in Describe: two statements per divergence.
	page1, err := divergences.List(context.Background(), e.db, divergences.StatusOpen, "", pageSize)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("divergences/describe-50-alone", func(b *testing.B) {
		for b.Loop() {
			for _, d := range page1.Divergences {
				if _, err := divergences.Describe(context.Background(), e.db, d.ID); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	measure(page{"divergences/200-open-page-4", last, `data-resolution="`}, count(openRow, pageSize))

	// The corrections' queue, oldest first, and the proposal form with
	// the chart's accounts.
	adjRow := `<article class="divergence adjustment" id="adjustment-`
	measure(page{"adjustments/all", "/console/adjustments", `id="propose-form"`}, count(adjRow, pageSize))
	measure(page{"adjustments/proposed", "/console/adjustments?status=proposed", `data-status="proposed"`}, count(adjRow, pageSize))
	_, booked := get("/console/adjustments?status=booked")
	measure(page{"adjustments/booked", "/console/adjustments?status=booked", `data-field="posting_set"`}, count(adjRow, pageSize))
	measure(page{"adjustments/booked-page-2",
		link(booked, regexp.MustCompile(`href="(/console/adjustments\?[^"]*after=[^"]*)"`)), `data-status="booked"`}, count(adjRow, pageSize))

	// A partner with a sale commissioned in most months: its summary,
	// its recent payouts and the payout form an admin is shown.
	measure(page{"partner/bp-042-payout-form", "/console/partners/bp-042", `id="payout-form"`}, nil)

	// The runs, and the run: its lines paged and filtered.
	runPath := "/console/reconciliation/" + strconv.FormatInt(run, 10)
	measure(page{"reconciliation/runs", "/console/reconciliation", `href="` + runPath + `"`}, nil)
	_, all := get(runPath)
	nextLines := regexp.MustCompile(`href="(/console/reconciliation/\d+\?[^"]*after=[^"]*)"`)
	measure(page{"reconciliation/run-10000-lines", runPath, `data-outcome="matched"`}, count(`<tr data-line=`, pageSize))
	measure(page{"reconciliation/run-page-2", link(all, nextLines), `data-outcome="matched"`}, count(`<tr data-line=`, pageSize))
	_, div := get(runPath + "?resultado=divergence")
	measure(page{"reconciliation/run-divergences", runPath + "?resultado=divergence", `data-outcome="divergence"`},
		count(`data-outcome="divergence"`, pageSize))
	measure(page{"reconciliation/run-divergences-page-2", link(div, nextLines), `data-outcome="divergence"`},
		count(`data-outcome="divergence"`, pageSize))
	measure(page{"reconciliation/run-paid-matched", runPath + "?resultado=matched&tipo=paid", `data-outcome="matched"`},
		count(`<tr data-line=`, pageSize))
	measure(page{"reconciliation/run-ledger-side", runPath + "?lado=ledger", "Nenhuma linha com este filtro"}, nil)

	// The month's books (the balancete in Portuguese, by the chart's
	// names) and the trend chart, read from the month sums and the
	// benchDelta sales booked since (monthSums).
	measure(page{"month/open-2025-12", "/console/month/2025-12", `id="balancete"`}, contains("Caixa (saldo no PSP)"))
	measure(page{"month/closed-2025-06", "/console/month/2025-06", `id="balancete"`}, contains("Caixa (saldo no PSP)"))
	measure(page{"chart/12-months-to-2025-12", "/console/chart?to=2025-12", `id="trend-chart"`}, count(`<tr data-month=`, 12))
	measure(page{"chart.svg/12-months-to-2025-12", "/console/chart.svg?to=2025-12", `<svg`}, nil)
}

// contains wants s on the page.
func contains(s string) func(string) error {
	return func(body string) error {
		if !strings.Contains(body, s) {
			return fmt.Errorf("without %s", s)
		}
		return nil
	}
}

// benchAct is the console over the kept ledger, with a reconciler of the
// endpoint bench-act, signed in as an admin.
type benchAct struct {
	db     *sqlx.DB
	ledger *postings.Ledger
	now    time.Time
	rec    *reconcile.Reconciler
	router http.Handler
	cookie *http.Cookie
}

func newBenchAct(b *testing.B, db *sqlx.DB, dbURL string) *benchAct {
	b.Helper()
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		b.Fatal(err)
	}
	e := &benchAct{db: db, now: time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)}
	now := func() time.Time { return e.now }
	e.ledger = postings.New(db, cal).WithClock(now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ep, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: benchActEndpoint, Scheme: "hodle", Merchant: "m-bench",
		Secrets: []string{"example-secret-for-local-tests-only"}}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	proc := inbox.NewProcessor(db, charges.NewApplier(db, e.ledger), log)
	// The statement is of February 2025; the reconciler's clock is a few
	// hours after its last line, so its window is not final: a final one
	// would list the ledger's sales it lacks as phantoms.
	recNow := func() time.Time {
		return benchledger.ChargeCreated(benchActFirstCharge + 4*benchActLines).Add(2 * time.Hour)
	}
	e.rec, err = reconcile.New(reconcile.Options{DB: db, DatabaseURL: dbURL, Inbox: inbox.NewInbox(db, proc), Ledger: e.ledger,
		Hooks: webhook.InboxEndpoints([]*webhook.Endpoint{ep}), Now: recNow, Log: log,
		Endpoints: []reconcile.EndpointConfig{{Endpoint: benchActEndpoint, Source: "csv", FinalAfter: 7 * 24 * time.Hour, MaxFileBytes: 16 << 20,
			CSV: reconcile.CSVMapping{PSPID: "trackId", ChargeRef: "externalId", Amount: "amount", AmountUnit: "centavos", Time: "date"}}}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := New(db, e.ledger, nil, log, now)
	if err != nil {
		b.Fatal(err)
	}
	c.Reconciliations = e.rec
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: db, Ledger: e.ledger, Log: log, Now: now, Reconciler: e.rec}).Register(r)
	c.Register(r)
	e.router = r
	srv := serve(b, r)
	cl := signedIn(b, srv, newToken(b, db, "bench-act-"+strconv.FormatInt(time.Now().UnixNano(), 36), auth.Admin))
	for _, ck := range cl.hc.Jar.Cookies(mustURL(b, srv.URL+"/console/")) {
		if ck.Name == sessionCookie {
			e.cookie = ck
			return e
		}
	}
	b.Fatal("no session cookie after signing in")
	return nil
}

// benchActPaid says whether charge g was paid through Hodle and not
// refunded (benchledger.Charges), so that its trackId finds its payment.
func benchActPaid(g int) bool {
	return g%3 == 0 && g%100 != 1 && g%10 != 2 && g%100 != 3
}

// statementRun returns the bench-act run of benchActLines lines,
// reconciling its statement the first time: payments of Hodle's charges
// from ch-300000 on, benchActMismatch of them for 5,00 more than was
// paid, then benchActUnknown payments of no charge (trackId
// bench-act-unknown-N).
func (e *benchAct) statementRun(b *testing.B) int64 {
	b.Helper()
	ctx := context.Background()
	var run int64
	err := e.db.Get(&run, `SELECT coalesce(max(id), 0) FROM reconciliation_runs WHERE endpoint = $1 AND status = 'succeeded' AND lines = $2`,
		benchActEndpoint, benchActLines)
	if err != nil {
		b.Fatal(err)
	}
	if run == 0 {
		var csv strings.Builder
		csv.WriteString("trackId,externalId,amount,date\n")
		g, n := benchActFirstCharge, 0
		for ; n < benchActLines-benchActUnknown; g++ {
			if !benchActPaid(g) {
				continue
			}
			amount := benchledger.ChargeAmount(g)
			if n%((benchActLines-benchActUnknown)/benchActMismatch) == 0 {
				amount += 500
			}
			paid := benchledger.ChargeCreated(g).Add(time.Minute)
			fmt.Fprintf(&csv, "track-%d,,%d,%s\n", g, amount, paid.Format(time.RFC3339))
			n++
		}
		at := benchledger.ChargeCreated(g)
		for i := range benchActUnknown {
			fmt.Fprintf(&csv, "bench-act-unknown-%d,,%d,%s\n", i, 1990+i, at.Add(time.Duration(i)*time.Second).Format(time.RFC3339))
		}
		start := time.Now()
		r, err := e.rec.ReconcileFile(ctx, benchActEndpoint, strings.NewReader(csv.String()), time.Time{}, time.Time{})
		if err != nil {
			b.Fatalf("reconcile the statement: %v (run %+v)", err, r)
		}
		b.Logf("statement of %d lines reconciled in %v: run %d", benchActLines, time.Since(start).Round(time.Millisecond), r.ID)
		run = r.ID
	}
	var st struct {
		Lines, Matched, Booked, Divergences int64
	}
	if err := e.db.Get(&st, `SELECT lines, matched, booked, divergences FROM reconciliation_runs WHERE id = $1`, run); err != nil {
		b.Fatal(err)
	}
	if st.Lines != benchActLines || st.Matched != benchActLines-benchActOpen || st.Booked != 0 || st.Divergences != benchActOpen {
		b.Fatalf("run %d: %+v, want %d lines, %d matched, %d divergences", run, st, benchActLines, benchActLines-benchActOpen, benchActOpen)
	}
	// Every divergence the run opened stands for money and offers
	// bookings: the page describes each.
	var ids []int64
	if err := e.db.Select(&ids, `SELECT id FROM divergences WHERE endpoint = $1 AND resolution IS NULL ORDER BY id`, benchActEndpoint); err != nil {
		b.Fatal(err)
	}
	if len(ids) != benchActOpen {
		b.Fatalf("%d divergences of %s, want %d", len(ids), benchActEndpoint, benchActOpen)
	}
	for _, id := range ids {
		d, err := divergences.Describe(ctx, e.db, id)
		if err == nil && d.Status == divergences.StatusOpen && len(d.Offers) == 0 {
			err = fmt.Errorf("open, no offers: %+v", d)
		}
		if err != nil {
			b.Fatalf("divergence %d: %v", id, err)
		}
	}
	return run
}

// openDivergences leaves the first n divergences of the bench-act run
// open and sets the others aside as resolved by a note (no booking: they
// stay open to be booked when reopened), so that the divergences page
// has n open. Others' divergences are not touched; the page's count is
// checked to be the run's alone.
func (e *benchAct) openDivergences(b *testing.B, n int) {
	b.Helper()
	_, err := e.db.Exec(`UPDATE divergences d SET
			status = CASE WHEN r.k <= $2 THEN 'open' ELSE 'resolved' END,
			resolution_note = CASE WHEN r.k <= $2 THEN NULL ELSE $3 END,
			resolved_at = CASE WHEN r.k <= $2 THEN NULL ELSE now() END
		FROM (SELECT id, row_number() OVER (ORDER BY id) AS k FROM divergences WHERE endpoint = $1 AND resolution IS NULL) r
		WHERE d.id = r.id`, benchActEndpoint, n, fmt.Sprintf("bench-act: set aside to measure the page with %d open", n))
	if err != nil {
		b.Fatal(err)
	}
	open, err := divergences.CountOpen(context.Background(), e.db)
	if err != nil {
		b.Fatal(err)
	}
	if open != int64(n) {
		b.Fatalf("%d open divergences, want %d (others than the run's are open on this ledger)", open, n)
	}
}

// adjustmentsQueue proposes benchActAdjustments adjustments (keyed
// bench-act-adj-N: a second run replays them) and has a second person
// approve and book the first benchActBooked.
func (e *benchAct) adjustmentsQueue(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	corr := adjustments.Corrections{DB: e.db, Ledger: e.ledger}
	proposer := adjustments.Actor{Name: "bench-act-proposer"}
	approver := adjustments.Actor{Name: "bench-act-approver"}
	start, made := time.Now(), 0
	for i := range benchActAdjustments {
		amount := int64(100 * (i + 1))
		adj, err := corr.Propose(ctx, adjustments.Request{
			IdempotencyKey: fmt.Sprintf("bench-act-adj-%03d", i),
			Legs:           []adjustments.Leg{{Account: accounts.Cash, Amount: amount}, {Account: accounts.Adjustments, Amount: -amount}},
			Reason:         fmt.Sprintf("bench-act: acerto de caixa %d", i),
			Competence:     "2025-12-15",
		}, proposer, e.now)
		if err != nil {
			b.Fatalf("propose %d: %v", i, err)
		}
		if !adj.Replayed {
			made++
		}
		if i < benchActBooked && adj.Status == adjustments.StatusProposed {
			if _, err := corr.Approve(ctx, adj.ID, approver, e.now); err != nil {
				b.Fatalf("approve %d: %v", adj.ID, err)
			}
		}
	}
	if made > 0 {
		b.Logf("%d adjustments proposed in %v", made, time.Since(start).Round(time.Millisecond))
	}
	var st struct {
		Proposed int `db:"proposed"`
		Booked   int `db:"booked"`
	}
	if err := e.db.Get(&st, `SELECT count(*) FILTER (WHERE status = 'proposed') AS proposed, count(*) FILTER (WHERE status = 'booked') AS booked
		FROM adjustments WHERE idempotency_key LIKE 'bench-act-adj-%'`); err != nil {
		b.Fatal(err)
	}
	if st.Booked != benchActBooked || st.Proposed != benchActAdjustments-benchActBooked {
		b.Fatalf("bench adjustments: %+v, want %d booked, %d proposed", st, benchActBooked, benchActAdjustments-benchActBooked)
	}
}

// monthSums stores the month sums once, as razao serve keeps them
// (monthsums.Run), and then books benchDelta sales in 2025-12 beyond
// them (keyed bench-act-delta-N, booked once): a refresh interval's worth
// of sets the month and chart pages read from the postings, as
// BenchmarkPages has them. Without month sums each open month is summed
// from its ~600,000 postings: seconds a page.
func (e *benchAct) monthSums(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	var stored bool
	if err := e.db.Get(&stored, `SELECT EXISTS (SELECT 1 FROM month_sums WHERE month = $1)`, benchledger.LastMonth.First()); err != nil {
		b.Fatal(err)
	}
	if !stored {
		start := time.Now()
		n, err := monthsums.Refresh(ctx, e.db)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("month sums of %d months stored in %v", n, time.Since(start).Round(time.Millisecond))
	}
	var booked int
	if err := e.db.Get(&booked, `SELECT count(*) FROM posting_sets WHERE kind = 'sale' AND charge_id LIKE 'bench-act-delta-%'`); err != nil {
		b.Fatal(err)
	}
	if booked == benchDelta {
		return
	}
	for i := range benchDelta {
		s, err := postings.Sale("bench-act-delta-"+strconv.Itoa(i), "BRL", 4990, 75, time.Date(2025, 12, 20, 15, 0, i%60, 0, time.UTC))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.ledger.Post(ctx, s); err != nil && !errors.Is(err, postings.ErrAlreadyPosted) {
			b.Fatalf("delta sale %d: %v", i, err)
		}
	}
}

// logSizes logs what the pages read.
func (e *benchAct) logSizes(b *testing.B, run int64) {
	b.Helper()
	var st struct {
		Postings    int64  `db:"postings"`
		Sets        int64  `db:"sets"`
		Charges     int64  `db:"charges"`
		Divergences int64  `db:"divergences"`
		Adjustments int64  `db:"adjustments"`
		Lines       int64  `db:"lines"`
		PartnerSets int64  `db:"partner_sets"`
		Size        string `db:"size"`
	}
	err := e.db.Get(&st, `SELECT (SELECT count(*) FROM postings) AS postings, (SELECT count(*) FROM posting_sets) AS sets,
		(SELECT count(*) FROM charges) AS charges, (SELECT count(*) FROM divergences) AS divergences,
		(SELECT count(*) FROM adjustments) AS adjustments, (SELECT count(*) FROM reconciliation_lines WHERE run_id = $1) AS lines,
		(SELECT count(*) FROM posting_sets WHERE partner = 'bp-042') AS partner_sets,
		pg_size_pretty(pg_database_size(current_database())) AS size`, run)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("ledger %s: %d postings in %d sets, %d charges, %d divergences, %d adjustments, run %d of %d lines, bp-042 in %d sets",
		st.Size, st.Postings, st.Sets, st.Charges, st.Divergences, st.Adjustments, run, st.Lines, st.PartnerSets)
}
