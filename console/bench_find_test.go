package console

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/api"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/charges"
	"github.com/razao/razao/internal/benchledger"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// BenchmarkFindPages measures the journal, the search and a charge's page
// on the benchmarks' ledger (internal/benchledger: RAZAO_CONSOLE_BENCH_SALES
// sales, 2,375,000 by default: about 10 million postings) beside
// RAZAO_CONSOLE_BENCH_CHARGES charges and their deliveries (500,000 by
// default). Building them takes minutes, so it runs only when asked:
//
//	RAZAO_BENCH_FIND=1 RAZAO_BENCH_DB=razao_console_find \
//	  go test -run '^$' -bench FindPages -benchtime 20x ./console/
//
// RAZAO_BENCH_DB keeps the database between runs (pgtest.KeptDatabase).
func BenchmarkFindPages(b *testing.B) {
	if os.Getenv("RAZAO_BENCH_FIND") == "" {
		b.Skip("set RAZAO_BENCH_FIND=1 to build the ledger and measure the journal, search and charge pages")
	}
	sales := benchEnvInt(b, "RAZAO_CONSOLE_BENCH_SALES", 2_375_000)
	nCharges := benchEnvInt(b, "RAZAO_CONSOLE_BENCH_CHARGES", 500_000)
	db, _ := pgtest.KeptDatabase(b, func(db *sqlx.DB) bool {
		var built bool
		db.Get(&built, `SELECT EXISTS (SELECT 1 FROM month_snapshots WHERE month = $1) AND EXISTS (SELECT 1 FROM charges)`,
			benchledger.LastClosed.First())
		return built
	}, func(db *sqlx.DB) {
		benchledger.Build(b, db, sales, benchPartners)
		benchledger.Charges(b, db, nCharges)
	})
	var st struct {
		Postings int64 `db:"postings"`
		Charges  int64 `db:"charges"`
	}
	if err := db.Get(&st, `SELECT (SELECT count(*) FROM postings) AS postings, (SELECT count(*) FROM charges) AS charges`); err != nil {
		b.Fatal(err)
	}
	b.Logf("ledger: %d postings, %d charges", st.Postings, st.Charges)

	// The ledger's sets name charges b1 to b<sales>, which the charges'
	// table does not hold: register one, sold, commissioned, refunded and
	// reversed (g mod 20 = 6), so that a charge's page reads sets with
	// their legs too. Registering it again is a no-op.
	const withSets = "b1000006"
	if _, _, err := charges.Register(context.Background(), db, charges.NewCharge{
		ID: withSets, Amount: 1000 + 1000006*7919%49000, Partner: "bp-003", CommissionBP: 1000, Access: "bench",
	}); err != nil {
		b.Fatal(err)
	}
	h, cookie := benchConsole(b, db)
	get := func(path string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	// The second page of the journal, by the first one's link.
	_, first := get("/console/journal")
	next := regexp.MustCompile(`href="(/console/journal\?[^"]*cursor=[^"]*)"`).FindStringSubmatch(first)
	if next == nil {
		b.Fatal("the journal's first page has no link to older sets")
	}
	// A charge paid through bcb-pix (benchledger.Charges: g mod 3 = 1)
	// between one paid through Hodle and one through Standard Webhooks.
	paid := func(g int) bool { return g%10 != 2 && g%100 != 1 && g%100 != 3 }
	g := nCharges * 4 / 5
	for g%3 != 1 || !paid(g-1) || !paid(g) || !paid(g+1) {
		g++
	}
	chargeRow := func(g int) string { return `data-charge="ch-` + strconv.Itoa(g) + `"` }
	charge := "ch-" + strconv.Itoa(g)
	q := func(s string) string { return url.QueryEscape(s) }
	// want is what each page must show, lest a page that found nothing
	// be measured.
	sets, found, nothing := `<tbody class="set"`, chargeRow(g), `id="search-nothing"`
	for _, p := range []struct{ name, path, want string }{
		{"journal/none", "/console/journal", sets},
		{"journal/page-2", htmlUnescape(next[1]), sets},
		{"journal/competence-2025-06", "/console/journal?de=01%2F06%2F2025&ate=30%2F06%2F2025", sets},
		{"journal/competence-2024-03-10-to-2025-02-20", "/console/journal?de=10%2F03%2F2024&ate=20%2F02%2F2025", sets},
		{"journal/account-income:revenue", "/console/journal?conta=income%3Arevenue", sets},
		{"journal/account-parent-of-500", "/console/journal?conta=liabilities%3Acommission-payable", sets},
		{"journal/partner-bp-042", "/console/journal?parceiro=bp-042", sets},
		{"journal/kind-payout", "/console/journal?tipo=payout", sets},
		{"journal/amount-49,90", "/console/journal?min=49%2C90&max=49%2C90", sets},
		{"journal/amount-400-to-500", "/console/journal?min=400&max=500", sets},
		{"journal/charge-b1000006", "/console/journal?cobranca=b1000006", sets},
		{"journal/kind-sale+competence-month", "/console/journal?tipo=sale&de=01%2F06%2F2025&ate=30%2F06%2F2025", sets},
		{"search/charge-id", "/console/search?q=" + q(charge), found},
		{"search/end-to-end-id", "/console/search?q=" + q("E"+strconv.Itoa(g)), found},
		{"search/track-id", "/console/search?q=" + q("track-"+strconv.Itoa(g-1)), chargeRow(g - 1)},
		{"search/webhook-id", "/console/search?q=" + q("msg_"+strconv.Itoa(g+1)), chargeRow(g + 1)},
		{"search/partner", "/console/search?q=bp-042", sets},
		{"search/amount-49,90", "/console/search?q=" + q("49,90"), sets},
		{"search/date-05/06/2025", "/console/search?q=" + q("05/06/2025"), sets},
		{"search/nothing", "/console/search?q=" + q("nada-com-este-nome"), nothing},
		{"charge/" + charge + "-a-delivery", "/console/charges/" + charge, `<li data-type="delivery">`},
		{"charge/" + withSets + "-four-sets", "/console/charges/" + withSets, `<tr data-account="liabilities:commission-payable:bp-003">`},
	} {
		if code, body := get(p.path); code != http.StatusOK || !strings.Contains(body, p.want) {
			b.Fatalf("%s: %d, without %s\n%.3000s", p.path, code, p.want, body)
		}
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				if code, _ := get(p.path); code != http.StatusOK {
					b.Fatalf("%s: %d", p.path, code)
				}
			}
		})
	}
}

func benchEnvInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1000 {
		b.Fatalf("%s=%q: want a number, at least 1000", name, s)
	}
	return n
}

// benchConsole is the console and the /v1 API over a kept database, with
// a session of a read token: the handler and the session's cookie.
func benchConsole(b *testing.B, db *sqlx.DB) (http.Handler, *http.Cookie) {
	b.Helper()
	cal, err := periods.NewCalendar(periods.DefaultTimeZone)
	if err != nil {
		b.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC) }
	ledger := postings.New(db, cal).WithClock(now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(db, ledger, nil, log, now)
	if err != nil {
		b.Fatal(err)
	}
	r := mux.NewRouter().SkipClean(true)
	r.NotFoundHandler, r.MethodNotAllowedHandler = api.NotFound(), api.MethodNotAllowed(r)
	(&api.API{DB: db, Ledger: ledger, Log: log, Now: now}).Register(r)
	c.Register(r)
	srv := serve(b, r)
	cl := signedIn(b, srv, newToken(b, db, "bench-find-"+strconv.FormatInt(time.Now().UnixNano(), 36), auth.Read))
	for _, ck := range cl.hc.Jar.Cookies(mustURL(b, srv.URL+"/console/")) {
		if ck.Name == sessionCookie {
			return r, ck
		}
	}
	b.Fatal("no session cookie after signing in")
	return nil, nil
}

// htmlUnescape undoes the only escape html/template writes in a URL of
// the pages (&amp;).
func htmlUnescape(s string) string {
	return regexp.MustCompile(`&amp;`).ReplaceAllString(s, "&")
}
