package reconcile

import (
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/inbox"
	"github.com/razao/razao/internal/pgtest"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/webhook"
)

// benchEnv is what the reconciliation benchmarks share: a database of
// their own, the delivery path on it, and a reconciler of one Hodle CSV
// endpoint ("hodle", merchant "m"; trackId, externalId, amount in
// centavos, date) whose charges each benchmark inserts itself.
type benchEnv struct {
	db   *sqlx.DB
	proc *inbox.Processor
	r    *Reconciler
	ep   *endpoint
	// at is the statements' time: three hours ago, whole seconds.
	at time.Time
}

func newBenchEnv(b *testing.B, log *slog.Logger) *benchEnv {
	b.Helper()
	db, dbURL := pgtest.NewWithURL(b)
	cal, _ := periods.NewCalendar(periods.DefaultTimeZone)
	ledger := postings.New(db, cal)
	proc := inbox.NewProcessor(db, charges.NewApplier(db, ledger), log)
	hook, err := webhook.NewEndpoint(webhook.EndpointConfig{Name: "hodle", Scheme: "hodle", Merchant: "m",
		Secrets: []string{"example-secret-for-local-tests-only"}}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(Options{DB: db, DatabaseURL: dbURL, Log: log, Inbox: inbox.NewInbox(db, proc), Ledger: ledger, Hooks: []*inbox.Endpoint{&hook.Endpoint},
		Endpoints: []EndpointConfig{{Endpoint: "hodle", Source: "csv", CSV: CSVMapping{PSPID: "trackId", ChargeRef: "externalId",
			Amount: "amount", AmountUnit: "centavos", Time: "date"}}}})
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{db: db, proc: proc, r: r, ep: r.eps["hodle"], at: time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)}
}

// benchLines is the statement's size: RAZAO_BENCH_LINES, else 100,000.
func benchLines() int {
	if v, err := strconv.Atoi(os.Getenv("RAZAO_BENCH_LINES")); err == nil && v > 0 {
		return v
	}
	return 100_000
}
