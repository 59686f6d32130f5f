package scheme

import (
	"reflect"
	"strings"
	"testing"

	"github.com/razao/razao/money"
)

// The componentesValor bodies below are the Pix API specification's own
// (API Pix 2.9.0, schema Pix, "Exemplos válidos", and the example
// pixResponse3, "Exemplo de Pix com Saque"), byte for byte; only the item
// around them is ours (the example's endToEndId has 34 characters, two
// more than its own schema allows).
func TestBCBPixParsesTheSpecComponentesValorExamples(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	const (
		imediata = `{
                "original": {
                  "valor": "100.00"
                } 
              }`
		saque = `{
                "saque": {
                  "valor": "100.00",
                  "modalidadeAgente": "AGPSS",
                  "prestadorDeServicoDeSaque": "12345678"
                } 
              }`
		saqueOriginalZero = `{
                "original": {
                  "valor": "0.00"
                },
                "saque": {
                  "valor": "100.00",
                  "modalidadeAgente": "AGPSS",
                  "prestadorDeServicoDeSaque": "12345678"
                } 
              }`
		troco = `{
                "original": {
                  "valor": "80.00"
                },
                "troco": {
                  "valor": "20.00",
                  "modalidadeAgente": "AGTEC",
                  "prestadorDeServicoDeSaque": "12345678"
                } 
              }`
		trocoFirst = `{
                "troco": {
                  "valor": "20.00",
                  "modalidadeAgente": "AGTEC",
                  "prestadorDeServicoDeSaque": "12345678"
                },
                "original": {
                  "valor": "80.00"
                }
              }`
		cobvMultaJuros = `{
                "original": {
                  "valor": "100.00"
                },
                "multa": {
                  "valor": "3.00"
                },
                "juros": {
                  "valor": "2.00"
                }
              }`
		pixResponse3 = `{"original":{"valor":"180.00"},"saque":{"valor":"20.00","modalidadeAgente":"AGPSS","prestadorDeServicoDeSaque":"12345678"}}`
	)
	tests := []struct {
		name, valor, components string
		want                    *Components
	}{
		{"cobrança imediata", "100.00", imediata, &Components{Parts: money.Parts{Original: 10000}}},
		{"Pix Saque", "100.00", saque, &Components{Parts: money.Parts{Withdrawal: 10000}, Agent: "AGPSS", Provider: "12345678"}},
		{"Pix Saque, original 0.00", "100.00", saqueOriginalZero,
			&Components{Parts: money.Parts{Withdrawal: 10000}, Agent: "AGPSS", Provider: "12345678"}},
		{"Pix Troco", "100.00", troco, &Components{Parts: money.Parts{Original: 8000, Change: 2000}, Agent: "AGTEC", Provider: "12345678"}},
		{"Pix Troco, troco first", "100.00", trocoFirst,
			&Components{Parts: money.Parts{Original: 8000, Change: 2000}, Agent: "AGTEC", Provider: "12345678"}},
		{"cobv, multa 3% and juros", "105.00", cobvMultaJuros, &Components{Parts: money.Parts{Original: 10000, Fine: 300, Interest: 200}}},
		{"pixResponse3, Pix com Saque", "200.00", pixResponse3,
			&Components{Parts: money.Parts{Original: 18000, Withdrawal: 2000}, Agent: "AGPSS", Provider: "12345678"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := `{"pix":[{"endToEndId":"` + e2eA + `","txid":"82433415910c47e5adb6ac3527cca160","valor":"` + tt.valor +
				`","componentesValor":` + tt.components + `,"horario":"2020-09-10T13:03:33.902Z","infoPagador":"Saque Pix"}]}`
			got, err := parse(t, s, body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0].Components, tt.want) {
				t.Fatalf("Parse = %+v, want components %+v", got, tt.want)
			}
			if sum, valor := got[0].Parts().Sum(), got[0].Amount; sum != valor {
				t.Fatalf("the spec's valid example adds up to %d, valor is %d", sum, valor)
			}
		})
	}
}

func TestBCBPixComponentsReadTheSchemasSpellingAndCobvReductions(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	body := `{"pix":[{"endToEndId":"` + e2eA + `","txid":"t1","valor":"93.50","horario":"2026-09-01T10:00:00Z",
	  "componentesValor":{"original":{"valor":"100.00"},"abatimento":{"valor":"5.00"},"desconto":{"valor":"1.50"},
	    "saque":{"valor":"0.00","modalidadeAgente":"AGTOT","prestadorDoServicoDeSaque":"ABCD1234"},"novidade":{"valor":"x"}}}]}`
	got, err := parse(t, s, body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Components{Parts: money.Parts{Original: 10000, Rebate: 500, Discount: 150}, Agent: "AGTOT", Provider: "ABCD1234"}
	if !reflect.DeepEqual(got[0].Components, want) {
		t.Fatalf("components = %+v, want %+v", got[0].Components, want)
	}
}

// TestBCBPixSetsAsideAPixWithMalformedComponents: a componentesValor
// that does not read makes its Pix unbookable (a divergence naming the
// field), not the callback malformed.
func TestBCBPixSetsAsideAPixWithMalformedComponents(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	for _, tt := range []struct{ name, cv, field string }{
		{"not an object", `[]`, "pix[0].componentesValor"},
		{"part not an object", `{"original":"80.00"}`, "pix[0].componentesValor.original"},
		{"valor a number", `{"original":{"valor":80}}`, "pix[0].componentesValor.original.valor"},
		{"valor with one decimal", `{"troco":{"valor":"20.0"}}`, "pix[0].componentesValor.troco.valor"},
		{"valor negative", `{"desconto":{"valor":"-1.00"}}`, "pix[0].componentesValor.desconto.valor"},
		{"valor missing", `{"juros":{}}`, "pix[0].componentesValor.juros.valor"},
		{"agent a number", `{"saque":{"valor":"1.00","modalidadeAgente":1}}`, "pix[0].componentesValor.saque.modalidadeAgente"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := `{"pix":[{"endToEndId":"` + e2eA + `","valor":"100.00","horario":"2026-09-01T10:00:00Z","componentesValor":` + tt.cv + `}]}`
			got, err := parse(t, s, body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got) != 1 || got[0].Kind != KindUnbookable || got[0].Problem == nil ||
				got[0].Problem.Reason != ProblemMalformed || !strings.Contains(got[0].Problem.Detail, ": "+tt.field+": ") {
				t.Fatalf("got %+v, want the Pix unbookable, malformed at %s", got, tt.field)
			}
		})
	}
}

func TestBCBPixMarksRetiradaRefundsAsCashOut(t *testing.T) {
	t.Parallel()
	s := mustNew(t, "bcb-pix", Config{Secrets: []string{bcbSecret}})
	body := `{"pix":[{"endToEndId":"` + e2eA + `","txid":"t1","valor":"100.00","horario":"2026-09-01T10:00:00Z",
	  "componentesValor":{"original":{"valor":"80.00"},"troco":{"valor":"20.00","modalidadeAgente":"AGTEC","prestadorDoServicoDeSaque":"12345678"}},
	  "devolucoes":[
	    {"id":"d1","rtrId":"D12345678202609011100abcdefghijk","valor":"20.00","natureza":"RETIRADA",
	     "horario":{"solicitacao":"2026-09-02T10:00:00Z","liquidacao":"2026-09-02T10:00:05Z"},"status":"DEVOLVIDO"},
	    {"id":"d2","rtrId":"D12345678202609011100abcdefghijl","valor":"10.00","natureza":"ORIGINAL",
	     "horario":{"solicitacao":"2026-09-02T10:00:00Z","liquidacao":"2026-09-02T10:00:05Z"},"status":"DEVOLVIDO"}]}]}`
	got, err := parse(t, s, body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(got) != 3 || got[0].OfCashOut() || !got[1].OfCashOut() || got[2].OfCashOut() || got[1].RefundID != "d1" {
		t.Fatalf("Parse = %+v, want only devolução d1 (RETIRADA) of cash out", got)
	}
	if got[1].Components != nil || got[0].Components == nil {
		t.Fatalf("components on %+v, want on the credit only", got)
	}
}
