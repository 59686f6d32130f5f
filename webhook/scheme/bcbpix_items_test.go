package scheme

import (
	"strings"
	"testing"
)

// pixItemsCallback is the specification's pixWebhook1 and pixWebhook2
// (API Pix 2.9.0, components.examples), and a third Pix whose devoluções
// are one of each: a DEVOLVIDO as the specification has it, a DEVOLVIDO
// without the optional horario.liquidacao, and a status the
// specification may add (new enum values are a compatible change).
const pixItemsCallback = `{"pix":[
  {"endToEndId":"E12345678202009091221kkkkkkkkkkk","txid":"c3e0e7a4e7f1469a9f782d3d4999343c","valor":"110.00",
   "horario":"2020-09-09T20:15:00.358Z","infoPagador":"0123456789",
   "devolucoes":{"id":"123ABC","rtrId":"D12345678202009091221abcdf098765","valor":"10.00",
     "horario":{"solicitacao":"2020-09-09T20:15:00.358Z"},"status":"EM_PROCESSAMENTO"}},
  {"endToEndId":"E87654321202009091221dfghi123456","txid":"971122d8f37211eaadc10242ac120002","valor":"110.00",
   "horario":"2020-09-09T20:15:00.358Z","infoPagador":"0123456789"},
  {"endToEndId":"E12345678202009091221abcdef12345","txid":"cd1fe328c875481285a6f233ae41b662","valor":"100.00",
   "horario":"2020-09-10T13:03:33.902Z",
   "devolucoes":[
     {"id":"000AAA111","rtrId":"D12345678202009091000abcde123456","valor":"11.00","natureza":"ORIGINAL",
      "horario":{"solicitacao":"2020-09-10T13:03:33.902Z","liquidacao":"2020-09-10T13:04:00.000Z"},"status":"DEVOLVIDO"},
     {"id":"000AAA222","rtrId":"D12345678202009091000abcde654321","valor":"12.00",
      "horario":{"solicitacao":"2020-09-10T13:05:00.000Z"},"status":"DEVOLVIDO"},
     {"id":"000AAA333","rtrId":"D12345678202009091000abcde999999","valor":"13.00",
      "horario":{"solicitacao":"2020-09-10T13:06:00.000Z","liquidacao":"2020-09-10T13:07:00.000Z"},"status":"NOVO_STATUS"}
   ]}
]}`

// TestBCBPixJudgesEachDevolucaoOnItsOwn: a DEVOLVIDO without liquidacao
// and a status razao does not know do not refuse the callback: the
// credits and the good refund are events, keyed as any, and
// the two others are unbookable under the keys they would have had, with
// what the PSP said (ids, amount) and why.
func TestBCBPixJudgesEachDevolucaoOnItsOwn(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	evs, err := parse(t, s, pixItemsCallback)
	if err != nil {
		t.Fatalf("Parse refused the callback: %v", err)
	}
	const e2e3 = "E12345678202009091221abcdef12345"
	type want struct {
		kind             Kind
		typ, id          string
		amount           int64
		problem, returns string
	}
	wants := []want{
		{KindPaid, "pix", "E12345678202009091221kkkkkkkkkkk", 11000, "", ""},
		{KindIgnored, "devolucao:EM_PROCESSAMENTO", "E12345678202009091221kkkkkkkkkkk:123ABC:EM_PROCESSAMENTO", 1000, "", "D12345678202009091221abcdf098765"},
		{KindPaid, "pix", "E87654321202009091221dfghi123456", 11000, "", ""},
		{KindPaid, "pix", e2e3, 10000, "", ""},
		{KindRefunded, "devolucao:DEVOLVIDO", e2e3 + ":000AAA111:DEVOLVIDO", 1100, "", "D12345678202009091000abcde123456"},
		{KindUnbookable, "devolucao:DEVOLVIDO", e2e3 + ":000AAA222:DEVOLVIDO", 1200, ProblemSettlementUnknown, "D12345678202009091000abcde654321"},
		{KindUnbookable, "devolucao:NOVO_STATUS", e2e3 + ":000AAA333:NOVO_STATUS", 1300, ProblemUnknownStatus, "D12345678202009091000abcde999999"},
	}
	if len(evs) != len(wants) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(wants), evs)
	}
	for i, w := range wants {
		ev := evs[i]
		reason := ""
		if ev.Problem != nil {
			reason = ev.Problem.Reason
		}
		if ev.Kind != w.kind || ev.Type != w.typ || ev.EventID != w.id || ev.Amount != w.amount || !ev.HasAmount ||
			reason != w.problem || ev.ReturnID != w.returns {
			t.Errorf("event %d = %+v (problem %q), want %+v", i, ev, reason, w)
		}
		if ev.Kind == KindUnbookable && (ev.ChargeID != "cd1fe328c875481285a6f233ae41b662" || ev.PSPRef != e2e3 || ev.RefundID == "" || !ev.OccurredAt.IsZero()) {
			t.Errorf("unbookable event %d lost what the PSP said: %+v", i, ev)
		}
	}
	if d := evs[5].Problem.Detail; !strings.Contains(d, "horario.liquidacao") || !strings.Contains(d, "2020-09-10T13:05:00Z") {
		t.Errorf("detail %q says neither the field nor when it was requested", d)
	}
	if evs[4].Nature != NatureOriginal || evs[1].Nature != "" {
		t.Errorf("natureza: %q, %q", evs[4].Nature, evs[1].Nature)
	}
}

// TestBCBPixUnreadableItemsAreKeyedByTheirJSON: an item with no readable
// endToEndId, or a devolução with no readable id, cannot be keyed as the
// specification keys it; it is keyed by a hash of its JSON, the same
// whatever the order of its fields, and the other items are booked.
func TestBCBPixUnreadableItemsAreKeyedByTheirJSON(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	one := func(body string) []Event {
		t.Helper()
		evs, err := parse(t, s, body)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		return evs
	}
	a := one(`{"pix":[{"endToEndId":"x","valor":"1.00"},{"endToEndId":"` + e2eA + `","valor":"1.00","horario":"2026-09-01T10:00:00Z",
		"devolucoes":[{"id":"d:1","valor":"1.00","status":"DEVOLVIDO"}]}]}`)
	b := one(`{"pix":[{"valor":"1.00","endToEndId":"x"}]}`)
	if len(a) != 3 || a[0].Kind != KindUnbookable || a[0].Type != "pix:unreadable" || !strings.HasPrefix(a[0].EventID, "sha256:") ||
		a[1].Kind != KindPaid || a[2].Kind != KindUnbookable || a[2].Type != "devolucao:unreadable" ||
		!strings.HasPrefix(a[2].EventID, e2eA+":sha256:") || a[2].RefundID != "" {
		t.Fatalf("events %+v", a)
	}
	if len(b) != 1 || b[0].EventID != a[0].EventID {
		t.Fatalf("the same item in another field order keyed %q, first %q", b[0].EventID, a[0].EventID)
	}
}

// TestBCBPixKeepsReturnIDAndNature: rtrId and natureza of every devolução
// are read into the event (not left in Extra), a MED return as any
// MED_* natureza, and a DEVOLVIDO of a natureza razao does not know is
// unbookable rather than booked as the merchant's refund.
func TestBCBPixKeepsReturnIDAndNature(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	for _, tt := range []struct {
		nature string
		kind   Kind
	}{{"ORIGINAL", KindRefunded}, {"RETIRADA", KindRefunded}, {"MED_OPERACIONAL", KindRefunded}, {"MED_FRAUDE", KindRefunded},
		{"MED_PIX_AUTOMATICO", KindRefunded}, {"MED_NOVO", KindRefunded}, {"NOVA_NATUREZA", KindUnbookable}} {
		body := `{"pix":[{"endToEndId":"` + e2eA + `","valor":"1.00","horario":"2026-09-01T10:00:00Z","devolucoes":[
			{"id":"d1","rtrId":"D12345678202609011100abcdefghijk","valor":"1.00","natureza":"` + tt.nature + `",
			 "horario":{"liquidacao":"2026-09-02T10:00:00Z"},"status":"DEVOLVIDO"}]}]}`
		evs, err := parse(t, s, body)
		if err != nil || len(evs) != 2 {
			t.Fatalf("%s: %+v %v", tt.nature, evs, err)
		}
		ev := evs[1]
		if ev.Kind != tt.kind || ev.Nature != tt.nature || ev.ReturnID != "D12345678202609011100abcdefghijk" || ev.Extra["rtrId"] != "" {
			t.Errorf("%s: %+v", tt.nature, ev)
		}
		if tt.kind == KindUnbookable && ev.Problem.Reason != ProblemUnknownNature {
			t.Errorf("%s: problem %+v", tt.nature, ev.Problem)
		}
	}
}
