package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/webhook/scheme"
)

func TestFrontRefusesWhatItCannotTrust(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := []byte(failedBody)
	good := hodleHeaders(clock.Unix(), body, hodleSecret)
	without := func(name string) http.Header {
		h := good.Clone()
		h.Del(name)
		return h
	}
	withCT := func(ct string) http.Header {
		h := good.Clone()
		h.Set("Content-Type", ct)
		return h
	}
	abacateBody := []byte(`{"id":"log_1","event":"customer.created","data":{"id":"cus-1"}}`)
	abacateSig := func() http.Header {
		mac := hmac.New(sha256.New, []byte(scheme.DefaultAbacatepayPublicKey))
		mac.Write(abacateBody)
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("X-Webhook-Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		return h
	}()
	tests := []struct {
		name   string
		path   string
		header http.Header
		body   []byte
		want   int
	}{
		{"unknown endpoint", "/webhooks/nope", good, body, http.StatusNotFound},
		{"missing signature", "/webhooks/hodle", without("X-Hodle-Signature"), body, http.StatusUnauthorized},
		{"missing timestamp", "/webhooks/hodle", without("X-Hodle-Timestamp"), body, http.StatusUnauthorized},
		{"one added space", "/webhooks/hodle", good, []byte(strings.Replace(failedBody, ":", ": ", 1)), http.StatusUnauthorized},
		{"another secret", "/webhooks/hodle", hodleHeaders(clock.Unix(), body, "another-secret"), body, http.StatusUnauthorized},
		{"timestamp 301 s old", "/webhooks/hodle", hodleHeaders(clock.Unix()-301, body, hodleSecret), body, http.StatusUnauthorized},
		{"timestamp 301 s ahead", "/webhooks/hodle", hodleHeaders(clock.Unix()+301, body, hodleSecret), body, http.StatusUnauthorized},
		{"oversized body", "/webhooks/hodle", good, []byte(`{"event":"x","data":{"pad":"` + strings.Repeat("a", 5000) + `"}}`), http.StatusRequestEntityTooLarge},
		{"not JSON content type", "/webhooks/hodle", withCT("text/plain"), body, http.StatusUnsupportedMediaType},
		{"abacatepay public-key signature without the URL secret", "/webhooks/abacate", abacateSig, abacateBody, http.StatusUnauthorized},
		{"abacatepay with a wrong URL secret", "/webhooks/abacate?webhookSecret=wrong-but-long-enough-0123456789abcdef", abacateSig, abacateBody, http.StatusUnauthorized},
		{"abacatepay with both factors", "/webhooks/abacate?webhookSecret=" + abacateSecret, abacateSig, abacateBody, http.StatusOK},
		{"standard without headers", "/webhooks/std", http.Header{"Content-Type": {"application/json"}}, body, http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.Post(tc.path, tc.header, tc.body); r.Code != tc.want {
				t.Fatalf("status %d (%+v), want %d", r.Code, r.Body, tc.want)
			}
		})
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE endpoint = 'hodle'`); n != 0 {
		t.Fatalf("%d hodle deliveries stored from refused requests", n)
	}
	t.Run("wrong method", func(t *testing.T) {
		if r := e.Do(http.MethodGet, "/webhooks/hodle", good, nil); r.Code != http.StatusMethodNotAllowed {
			t.Fatalf("GET: %d, want 405", r.Code)
		}
	})
}

func TestAuthenticButMalformedIsKeptAs400(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, body := range []string{
		`not json at all`,
		`{"event":"DEPOSIT_ASSET_REFUNDED","data":{"eventId":"","externalId":"order-1"}}`,
		`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"t-1","valueInBrl":"49.901"}}`,
	} {
		if r := e.PostHodle(body); r.Code != http.StatusBadRequest || r.Body.Status != "malformed" {
			t.Fatalf("%s: got %d %+v, want 400 malformed", body, r.Code, r.Body)
		}
	}
	if n := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`); n != 3 {
		t.Fatalf("%d malformed divergences, want 3", n)
	}
	if n := e.Count(`SELECT count(*) FROM inbox WHERE status = 'divergent' AND length(body) > 0`); n != 3 {
		t.Fatalf("%d malformed deliveries kept with their body, want 3", n)
	}
}

// The seed's table, row by row.
func TestSeedTable(t *testing.T) {
	t.Parallel()

	t.Run("original body accepted, then duplicate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.Charge("order-1", 4990, "", 0)
		if r := e.PostHodle(failedBody); r.Code != 200 || r.Body.Status != "accepted" {
			t.Fatalf("first: %d %+v", r.Code, r.Body)
		}
		if r := e.PostHodle(failedBody); r.Code != 200 || r.Body.Status != "duplicate" {
			t.Fatalf("second: %d %+v", r.Code, r.Body)
		}
	})

	t.Run("two concurrent deliveries: one inbox row, accepted and duplicate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.Charge("order-1", 4990, "", 0)
		// The gate: hold the unique key's slot with an uncommitted row of
		// the same key, so both requests wait on it before either commits.
		gate := e.DB.MustBegin()
		gate.MustExec(`INSERT INTO inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, event, body)
			VALUES ('hodle|DEPOSIT_ASSET_FAILED|event-1', 'hodle', 'hodle', 'loja-1', 'DEPOSIT_ASSET_FAILED', 'event-1', 'failed', '{}', '')`)
		replies := make([]reply, 2)
		var wg sync.WaitGroup
		for i := range replies {
			wg.Add(1)
			go func() { defer wg.Done(); replies[i] = e.PostHodle(failedBody) }()
		}
		e.WaitHeld(0, 2) // both sessions wait on a lock
		gate.Rollback()
		wg.Wait()
		got := map[string]int{}
		for _, r := range replies {
			if r.Code != 200 {
				t.Fatalf("reply %d %+v", r.Code, r.Body)
			}
			got[r.Body.Status]++
		}
		if got["accepted"] != 1 || got["duplicate"] != 1 {
			t.Fatalf("statuses %v, want one accepted and one duplicate", got)
		}
		if n := e.Count(`SELECT count(*) FROM inbox`); n != 1 {
			t.Fatalf("%d inbox rows, want 1", n)
		}
	})

	t.Run("storage unavailable: 503, nothing claimed", func(t *testing.T) {
		t.Parallel()
		dead, err := sqlx.Open("postgres", "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
		if err != nil {
			t.Fatal(err)
		}
		e := newEnvWithDB(t, dead, "")
		if r := e.PostHodle(failedBody); r.Code != http.StatusServiceUnavailable || r.Body.Status == "accepted" {
			t.Fatalf("got %d %+v, want 503 and no claim", r.Code, r.Body)
		}
	})

	t.Run("WEBHOOK_TEST: 200 and zero rows written anywhere", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		r := e.Post("/webhooks/hodle", http.Header{"Content-Type": {"application/json"}}, []byte(`{"event":"WEBHOOK_TEST","data":{}}`))
		if r.Code != 200 || r.Body.Status != "test" {
			t.Fatalf("got %d %+v, want 200 test", r.Code, r.Body)
		}
		for _, table := range []string{"inbox", "divergences", "outbox", "charges", "posting_sets", "postings", "access_grants"} {
			if n := e.Count(`SELECT count(*) FROM ` + table); n != 0 {
				t.Errorf("%d rows in %s", n, table)
			}
		}
	})
}

// One authentic delivery the inbox cannot store as such (a NUL in a
// string, an id longer than an index entry) is kept as malformed, and
// never takes the deliveries sharing its group commit down with it.
func TestUnstorableDeliveryIsMalformedAndSparesItsBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.GroupCommit()
	const n = 30
	for i := 0; i < n; i++ {
		e.Charge(fmt.Sprintf("order-%d", i), 4990, "", 0)
	}
	bad := []string{
		`{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"bad\u0000","externalId":"order-1"}}`,
		`{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"` + strings.Repeat("x", 1000) + `","externalId":"order-1"}}`,
	}
	replies := make([]reply, n+len(bad))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i >= n {
				replies[i] = e.Post("/webhooks/hodle", hodleHeaders(clock.Unix(), []byte(bad[i-n]), hodleSecret), []byte(bad[i-n]))
				return
			}
			replies[i] = e.PostHodle(hodlePaid(fmt.Sprintf("track-%d", i), fmt.Sprintf("order-%d", i), "49.90"))
		}()
	}
	close(start)
	wg.Wait()
	for i, r := range replies {
		want := 200
		if i >= n {
			want = 400
		}
		if r.Code != want {
			t.Errorf("delivery %d: %d %+v, want %d", i, r.Code, r.Body, want)
		}
	}
	if got := e.Count(`SELECT count(*) FROM divergences WHERE reason = 'malformed'`); got != int64(len(bad)) {
		t.Fatalf("%d malformed kept, want %d", got, len(bad))
	}
}
