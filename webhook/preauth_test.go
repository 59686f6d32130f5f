package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/razao/razao/webhook"
)

// floodBody is an unauthenticated body of about size bytes that a parser
// must walk to its end to refuse: an object of many keys, each allocated
// by a JSON tokenizer, left unclosed. Before authentication nothing may
// read it as JSON.
func floodBody(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"event":"WEBHOOK_TEST","data":{`)
	for i := 0; b.Len() < size-32; i++ {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(`"end":0`) // no closing braces: invalid JSON
	return b.Bytes()
}

// preauthRouter is the webhook handler alone, one endpoint per scheme at
// the default body limit. It has no inbox: a delivery refused before
// authentication never needs one.
func preauthRouter(t testing.TB) http.Handler {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var eps []*webhook.Endpoint
	for _, c := range []webhook.EndpointConfig{
		{Name: "hodle", Scheme: "hodle", Merchant: "loja-1", Secrets: []string{hodleSecret}},
		{Name: "abacate", Scheme: "abacatepay", Merchant: "loja-1", Secrets: []string{abacateSecret}},
		{Name: "std", Scheme: "standard", Merchant: "loja-1", Secrets: []string{standardSecret}},
		{Name: "pix", Scheme: "bcb-pix", Merchant: "loja-1", Secrets: []string{abacateSecret}},
	} {
		ep, err := webhook.NewEndpoint(c, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	r := mux.NewRouter()
	r.Handle("/webhooks/{endpoint}", webhook.NewHandler(eps, nil, func() time.Time { return clock }, log))
	return r
}

// forged is a request to endpoint whose authentication fails the way a
// flood's would: a wrong signature or secret for the endpoint's scheme.
func forged(endpoint string, body []byte) *http.Request {
	path := "/webhooks/" + endpoint
	if endpoint == "abacate" || endpoint == "pix" {
		path += "?webhookSecret=wrong-secret-wrong-secret-wrong-secret&hmac=wrong"
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hodle-Timestamp", fmt.Sprint(clock.Unix()))
	req.Header.Set("X-Hodle-Signature", "0000000000000000000000000000000000000000000000000000000000000000")
	req.Header.Set("Webhook-Id", "msg_1")
	req.Header.Set("Webhook-Timestamp", fmt.Sprint(clock.Unix()))
	req.Header.Set("Webhook-Signature", "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	req.Header.Set("X-Webhook-Signature", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	return req
}

// An unauthenticated body costs a bounded byte scan, not a parse: the
// observable is allocations. Refusing a 256 KB forgery of many keys must
// allocate no more than refusing a tiny one, but for the growth of the
// buffer the body is read into; a JSON walk would allocate for each of its
// thousands of keys. Not parallel: AllocsPerRun counts the whole
// process's allocations.
func TestUnauthenticatedBodyIsNotParsed(t *testing.T) {
	h := preauthRouter(t)
	big, tiny := floodBody(webhook.DefaultMaxBody-1), []byte(`{"event":"x"}`)
	for _, endpoint := range []string{"hodle", "abacate", "std", "pix"} {
		t.Run(endpoint, func(t *testing.T) {
			allocs := func(body []byte) float64 {
				return testing.AllocsPerRun(5, func() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, forged(endpoint, body))
					if rec.Code != http.StatusUnauthorized {
						t.Fatalf("%d bytes: %d %s, want 401", len(body), rec.Code, rec.Body)
					}
				})
			}
			small, large := allocs(tiny), allocs(big)
			t.Logf("%s: %.0f allocations for a tiny forgery, %.0f for 256 KB", endpoint, small, large)
			// io.ReadAll grows its buffer some tens of times up to 256 KB.
			if large-small > 100 {
				t.Fatalf("a 256 KB forgery allocates %.0f times, a tiny one %.0f: the body is parsed before authentication", large, small)
			}
		})
	}
}

// A test event larger than the bounded look before authentication is a
// test only once signed, and then still writes nothing.
func TestLargeTestEventIsATestOnlyOnceSigned(t *testing.T) {
	t.Parallel()
	e := newMerchantsEnv(t)
	var b bytes.Buffer
	b.WriteString(`{"event":"WEBHOOK_TEST","data":{"note":"`)
	b.Write(bytes.Repeat([]byte("x"), 4<<10))
	b.WriteString(`"}}`)
	body := b.Bytes()
	forgery := hodleHeaders(clock.Unix(), body, "another-secret")
	if r := e.Post("/webhooks/hodle", forgery, body); r.Code != http.StatusUnauthorized {
		t.Fatalf("unsigned large test event: %d %+v, want 401", r.Code, r.Body)
	}
	if r := e.HodleAt("hodle", string(body)); r.Code != 200 || r.Body.Status != "test" {
		t.Fatalf("signed large test event: %d %+v, want 200 test", r.Code, r.Body)
	}
	if r := e.Post("/webhooks/hodle", http.Header{"Content-Type": {"application/json"}}, []byte(`{"event":"WEBHOOK_TEST","data":{}}`)); r.Code != 200 || r.Body.Status != "test" {
		t.Fatalf("the published test event, unsigned: %d %+v, want 200 test", r.Code, r.Body)
	}
	if n := e.Count(`SELECT (SELECT count(*) FROM inbox) + (SELECT count(*) FROM divergences) + (SELECT count(*) FROM outbox)`); n != 0 {
		t.Fatalf("%d rows written for test events", n)
	}
}

// BenchmarkUnauthenticatedHodle256K is the cost of refusing one forged
// 256 KB body on a Hodle endpoint: what a flood of them takes from the
// genuine deliveries.
func BenchmarkUnauthenticatedHodle256K(b *testing.B) {
	h := preauthRouter(b)
	body := floodBody(webhook.DefaultMaxBody - 1)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, forged("hodle", body))
		if rec.Code != http.StatusUnauthorized {
			b.Fatalf("%d, want 401", rec.Code)
		}
	}
}
