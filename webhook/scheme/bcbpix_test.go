package scheme

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const (
	e2eA = "E12345678202608312230abcdefghijk" // 32 alphanumerics
	e2eB = "E87654321202609011000ABCDEFGHIJK"
)

func TestBCBPixAuthenticate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []string
		cert    bool
		query   []string
		ok      bool
	}{
		{name: "verified client certificate", cert: true, ok: true},
		{name: "verified client certificate, no secret configured", secrets: []string{}, cert: true, ok: true},
		{name: "URL secret", query: []string{"hmac", bcbSecret}, ok: true},
		{name: "previous URL secret during rotation", secrets: []string{bcbSecret, bcbSecretPrev},
			query: []string{"hmac", bcbSecretPrev}, ok: true},
		{name: "neither certificate nor secret"},
		{name: "no secret configured and no certificate", secrets: []string{}, query: []string{"hmac", bcbSecret}},
		{name: "wrong URL secret", query: []string{"hmac", bcbSecretPrev}},
		{name: "URL secret with a suffix", query: []string{"hmac", bcbSecret + "x"}},
		{name: "empty URL secret", query: []string{"hmac", ""}},
		{name: "two URL secrets", query: []string{"hmac", bcbSecret, "hmac", bcbSecret}},
		{name: "URL secret in another parameter", query: []string{"secret", bcbSecret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secrets := tt.secrets
			if secrets == nil {
				secrets = []string{bcbSecret}
			}
			s := mustNew(t, "bcb-pix", Config{Secrets: secrets})
			err := authenticate(t, s, Request{Query: query(tt.query...), ClientCertVerified: tt.cert, Body: []byte(`{"pix":[]}`)})
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestBCBPixNewRefusesShortSecrets(t *testing.T) {
	t.Parallel()
	_, err := New("bcb-pix", Config{Secrets: []string{"short"}})
	if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "short\"") {
		t.Fatalf("New = %v, want ErrConfig without the secret", err)
	}
}

func TestBCBPixParseMapsEveryItem(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	body := `{"pix":[
	  {"endToEndId":"` + e2eA + `","txid":"charge123","valor":"49.90","horario":"2026-08-31T22:30:00.358-03:00","infoPagador":"obrigado"},
	  {"endToEndId":"` + e2eB + `","txid":"charge456","valor":"100.00","horario":"2026-09-01T10:00:00Z",
	   "devolucoes":[
	     {"id":"dev1","rtrId":"D12345678202609011100abcdefghijk","valor":"10.00",
	      "horario":{"solicitacao":"2026-09-02T10:00:00Z","liquidacao":"2026-09-02T10:00:05Z"},"status":"DEVOLVIDO"},
	     {"id":"dev2","valor":"5.00","horario":{"solicitacao":"2026-09-03T10:00:00Z"},"status":"EM_PROCESSAMENTO"}
	   ]},
	  {"endToEndId":"` + e2eA[:31] + `Z","valor":"0.01","horario":"2026-09-01T10:00:00Z",
	   "devolucoes":{"id":"dev3","valor":"0.01","horario":{"liquidacao":"2026-09-04T00:00:00Z"},"status":"NAO_REALIZADO"}}
	]}`
	want := []Event{
		{Kind: KindPaid, Type: "pix", EventID: e2eA, ChargeID: "charge123", PSPRef: e2eA, Amount: 4990, HasAmount: true,
			OccurredAt: mustTime(t, "2026-08-31T22:30:00.358-03:00")},
		{Kind: KindPaid, Type: "pix", EventID: e2eB, ChargeID: "charge456", PSPRef: e2eB, Amount: 10000, HasAmount: true,
			OccurredAt: mustTime(t, "2026-09-01T10:00:00Z")},
		{Kind: KindRefunded, Type: "devolucao:DEVOLVIDO", EventID: e2eB + ":dev1:DEVOLVIDO", ChargeID: "charge456", PSPRef: e2eB,
			RefundID: "dev1", Amount: 1000, HasAmount: true, OccurredAt: mustTime(t, "2026-09-02T10:00:05Z"),
			ReturnID: "D12345678202609011100abcdefghijk"},
		{Kind: KindIgnored, Type: "devolucao:EM_PROCESSAMENTO", EventID: e2eB + ":dev2:EM_PROCESSAMENTO", ChargeID: "charge456",
			PSPRef: e2eB, RefundID: "dev2", Amount: 500, HasAmount: true},
		{Kind: KindPaid, Type: "pix", EventID: e2eA[:31] + "Z", PSPRef: e2eA[:31] + "Z", Amount: 1, HasAmount: true,
			OccurredAt: mustTime(t, "2026-09-01T10:00:00Z")},
		{Kind: KindIgnored, Type: "devolucao:NAO_REALIZADO", EventID: e2eA[:31] + "Z:dev3:NAO_REALIZADO", PSPRef: e2eA[:31] + "Z",
			RefundID: "dev3", Amount: 1, HasAmount: true, OccurredAt: mustTime(t, "2026-09-04T00:00:00Z")},
	}
	got, err := parse(t, s, body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse =\n%+v\nwant\n%+v", got, want)
	}
	if id := s.DeliveryID(Request{Body: []byte(body)}); id != "" {
		t.Fatalf("DeliveryID = %q, want empty", id)
	}
}

func TestBCBPixParseRefusesMalformedItems(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	item := func(fields string) string {
		return `{"pix":[{"endToEndId":"` + e2eA + `","txid":"t1","valor":"1.00","horario":"2026-09-01T10:00:00Z"` + fields + `}]}`
	}
	// itemWith builds one item from the valid fields, with key set to the
	// raw JSON value, or dropped when value is "".
	itemWith := func(key, value string) string {
		fields := map[string]string{
			"endToEndId": `"` + e2eA + `"`, "txid": `"t1"`, "valor": `"1.00"`, "horario": `"2026-09-01T10:00:00Z"`,
		}
		fields[key] = value
		var kept []string
		for _, k := range []string{"endToEndId", "txid", "valor", "horario"} {
			if fields[k] != "" {
				kept = append(kept, `"`+k+`":`+fields[k])
			}
		}
		return `{"pix":[{` + strings.Join(kept, ",") + `}]}`
	}
	itemWithout := func(key string) string { return itemWith(key, "") }
	withE2E := func(e2e string) string { return itemWith("endToEndId", `"`+e2e+`"`) }
	withField := itemWith
	dev := func(d string) string { return item(`,"devolucoes":[` + d + `]`) }
	const okDev = `"id":"d1","valor":"1.00","horario":{"solicitacao":"2026-09-02T10:00:00Z","liquidacao":"2026-09-02T10:00:01Z"}`
	tests := []struct {
		name, body, field string
	}{
		{"not an object", `[]`, "body"},
		{"missing pix", `{}`, "pix"},
		{"empty pix", `{"pix":[]}`, "pix"},
		{"pix an object", `{"pix":{}}`, "pix"},
		{"item not an object", `{"pix":["x"]}`, "pix[0]"},
		{"duplicate valor", `{"pix":[{"endToEndId":"` + e2eA + `","valor":"1.00","valor":"999.00","horario":"2026-09-01T10:00:00Z"}]}`, "body"},
		{"missing endToEndId", itemWithout("endToEndId"), "pix[0].endToEndId"},
		{"endToEndId of 31 characters", withE2E(e2eA[:31]), "pix[0].endToEndId"},
		{"endToEndId of 33 characters", withE2E(e2eA + "x"), "pix[0].endToEndId"},
		{"endToEndId with a colon", withE2E(e2eA[:31] + ":"), "pix[0].endToEndId"},
		{"empty txid", withField("txid", `""`), "pix[0].txid"},
		{"txid of 36 characters", withField("txid", `"`+strings.Repeat("a", 36)+`"`), "pix[0].txid"},
		{"txid with a dash", withField("txid", `"order-1"`), "pix[0].txid"},
		{"numeric txid", withField("txid", `123`), "pix[0].txid"},
		{"missing valor", itemWithout("valor"), "pix[0].valor"},
		{"valor with one decimal", withField("valor", `"49.9"`), "pix[0].valor"},
		{"valor with three decimals", withField("valor", `"49.900"`), "pix[0].valor"},
		{"valor without decimals", withField("valor", `"49"`), "pix[0].valor"},
		{"valor as a number", withField("valor", `49.90`), "pix[0].valor"},
		{"valor negative", withField("valor", `"-1.00"`), "pix[0].valor"},
		{"valor zero", withField("valor", `"0.00"`), "pix[0].valor"},
		{"valor of 11 digits", withField("valor", `"12345678901.00"`), "pix[0].valor"},
		{"valor with comma", withField("valor", `"1,00"`), "pix[0].valor"},
		{"missing horario", itemWithout("horario"), "pix[0].horario"},
		{"horario not RFC 3339", withField("horario", `"01/09/2026"`), "pix[0].horario"},
		{"devolucoes a string", item(`,"devolucoes":"x"`), "pix[0].devolucoes"},
		{"devolucao not an object", dev(`1`), "pix[0].devolucoes[0]"},
		{"devolucao without id", dev(`{"valor":"1.00","status":"DEVOLVIDO"}`), "pix[0].devolucoes[0].id"},
		{"devolucao id with a colon", dev(`{"id":"d:1","valor":"1.00","status":"EM_PROCESSAMENTO"}`), "pix[0].devolucoes[0].id"},
		{"devolucao id of 36 characters", dev(`{"id":"` + strings.Repeat("d", 36) + `","valor":"1.00","status":"EM_PROCESSAMENTO"}`), "pix[0].devolucoes[0].id"},
		{"devolucao without status", dev(`{` + okDev + `}`), "pix[0].devolucoes[0].status"},
		{"devolucao with a status that cannot key it", dev(`{` + okDev + `,"status":"pago:1"}`), "pix[0].devolucoes[0].status"},
		{"devolucao without valor", dev(`{"id":"d1","status":"EM_PROCESSAMENTO"}`), "pix[0].devolucoes[0].valor"},
		{"devolucao with bad valor", dev(`{"id":"d1","valor":"1","status":"EM_PROCESSAMENTO"}`), "pix[0].devolucoes[0].valor"},
		{"devolucao with a bad rtrId", dev(`{` + okDev + `,"status":"DEVOLVIDO","rtrId":"D-1"}`), "pix[0].devolucoes[0].rtrId"},
		{"devolucao with a natureza that is no token", dev(`{` + okDev + `,"status":"DEVOLVIDO","natureza":"med fraude"}`), "pix[0].devolucoes[0].natureza"},
		{"horario not an object", dev(`{"id":"d1","valor":"1.00","status":"DEVOLVIDO","horario":"2026-09-02T10:00:00Z"}`),
			"pix[0].devolucoes[0].horario"},
		{"bad liquidacao", dev(`{"id":"d1","valor":"1.00","status":"DEVOLVIDO","horario":{"liquidacao":"ontem"}}`),
			"pix[0].devolucoes[0].horario.liquidacao"},
		{"bad solicitacao", dev(`{"id":"d1","valor":"1.00","status":"EM_PROCESSAMENTO","horario":{"solicitacao":5}}`),
			"pix[0].devolucoes[0].horario.solicitacao"},
		{"second item bad", `{"pix":[{"endToEndId":"` + e2eA + `","valor":"1.00","horario":"2026-09-01T10:00:00Z"},{"endToEndId":"x"}]}`,
			"pix[1].endToEndId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			events, err := parse(t, s, tt.body)
			if !strings.HasPrefix(tt.field, "pix[") {
				// The envelope: nothing to judge item by item.
				if err == nil {
					t.Fatalf("Parse accepted %s as %+v", tt.body, events)
				}
				wantMalformedField(t, err, tt.field)
				return
			}
			// An item or devolução is judged on its own: the callback
			// parses, and the one that does not read is unbookable.
			if err != nil {
				t.Fatalf("Parse refused the callback for one item: %v", err)
			}
			var bad []Event
			for _, ev := range events {
				if ev.Kind == KindUnbookable {
					bad = append(bad, ev)
				}
			}
			if len(bad) != 1 || bad[0].Problem == nil || bad[0].Problem.Reason != ProblemMalformed ||
				!strings.Contains(bad[0].Problem.Detail, tt.field+":") || !bad[0].OccurredAt.IsZero() {
				t.Fatalf("Parse = %+v, want one unbookable event naming %s", events, tt.field)
			}
		})
	}
}
