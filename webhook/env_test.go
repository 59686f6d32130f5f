package webhook_test

import (
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/deliverytest"
	"github.com/razao/razao/webhook"
)

// env is the delivery path of one test, shared with inbox's tests
// (deliverytest.Env): the real front, inbox and processor on a database of
// its own. This package's own helpers are its methods.
type env struct{ *deliverytest.Env }

type reply = deliverytest.Reply

func newEnv(t testing.TB) *env {
	t.Helper()
	return &env{deliverytest.New(t)}
}

func newEnvWithDB(t testing.TB, db *sqlx.DB, url string) *env {
	t.Helper()
	return &env{deliverytest.NewWithDB(t, db, url)}
}

func newEnvWith(t testing.TB, extra ...webhook.EndpointConfig) *env {
	t.Helper()
	return &env{deliverytest.NewWith(t, extra...)}
}

func newMerchantsEnv(t testing.TB) *env {
	t.Helper()
	return &env{deliverytest.NewMerchants(t)}
}

// The shared fixtures, under the names the tests use.
const (
	hodleSecret    = deliverytest.HodleSecret
	abacateSecret  = deliverytest.AbacateSecret
	standardSecret = deliverytest.StandardSecret
	failedBody     = deliverytest.HodleFailedBody
	bcbSecret      = deliverytest.BCBSecret
)

var (
	clock           = deliverytest.Clock
	hodleHeaders    = deliverytest.HodleHeaders
	standardHeaders = deliverytest.StandardHeaders
	hodlePaid       = deliverytest.HodlePaid
	pixCallback     = deliverytest.PixCallback
	pixEndpoint     = deliverytest.PixEndpoint
)
