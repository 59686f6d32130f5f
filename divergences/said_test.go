package divergences

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/razao/razao/money"
)

// Every kind of detail says in English exactly what its call site wrote
// before it had a kind (the old format over the same arguments: the
// API's detail and every stored row's), says it in Portuguese with the
// amounts in reais and the ids as they are, and reads back from its
// stored form as it was.
func TestEveryDetailSaysTheOldEnglishAndPortuguese(t *testing.T) {
	t.Parallel()
	parts := money.Parts{Original: 10000, Interest: 250, Discount: 100}
	cause := errors.New(`amount 123456789012345 over the limit`)
	fee, amount := int64(35), int64(12345)
	tests := []struct {
		said Said
		// old is what the call site wrote before.
		old string
		// pt are what the Portuguese must say.
		pt []string
	}{
		{UnknownChargeID("ord-9"), fmt.Sprintf("no charge with id %q", "ord-9"), []string{"nenhuma cobrança", `"ord-9"`}},
		{UnknownChargeRef("E123"), fmt.Sprintf("no charge with psp reference %q", "E123"), []string{"referência do PSP", `"E123"`}},
		{MerchantMismatch("loja-1", "loja-2"), fmt.Sprintf("charge of merchant %q; event through an endpoint of merchant %q", "loja-1", "loja-2"),
			[]string{"lojista", `"loja-1"`, `"loja-2"`}},
		{EventRefused(cause), fmt.Sprintf("%v", cause), []string{"evento recusado", "“" + cause.Error() + "”"}},
		{RefundRefused("rf-1", cause), fmt.Sprintf("refund %s: %v", "rf-1", cause), []string{"estorno rf-1", "“" + cause.Error() + "”"}},
		{Unreadable(cause), cause.Error(), []string{"ilegível", "“" + cause.Error() + "”"}},
		{PSPProblem("pix E1: devolução natureza RETIRADA"), "pix E1: devolução natureza RETIRADA",
			[]string{"PSP", "“pix E1: devolução natureza RETIRADA”"}},
		{Unbookable("pix.weird"), "an event razao cannot book (" + "pix.weird" + ")", []string{"não sabe lançar", "pix.weird"}},
		{Disputed("charge.disputed"), "the PSP reports a dispute (" + "charge.disputed" + ")", []string{"contestação", "charge.disputed"}},
		{GaveUp(10, cause), fmt.Sprintf("gave up after %d attempts: %v", 10, cause), []string{"desistiu após 10 tentativas", "“" + cause.Error() + "”"}},
		{SecondPayment("psp:E1", "psp:E2", 12345), fmt.Sprintf("charge already paid by %s; payment %s of %d arrived too", "psp:E1", "psp:E2", 12345),
			[]string{"cobrança já paga por psp:E1", "psp:E2", "R$ 123,45"}},
		{SecondPayment("", "psp:E2", 12345), fmt.Sprintf("charge already paid by %s; payment %s of %d arrived too",
			"a payment of unknown reference", "psp:E2", 12345), []string{"referência desconhecida", "psp:E2", "R$ 123,45"}},
		{PaymentRestated("psp:E1", 10000, 35, 12345, 40), fmt.Sprintf("payment %s was booked for %d (PSP fee %d); now stated as %d (PSP fee %d)",
			"psp:E1", 10000, 35, 12345, 40), []string{"psp:E1", "R$ 100,00", "R$ 0,35", "R$ 123,45", "R$ 0,40"}},
		{PaymentWithoutAmount(10000), fmt.Sprintf("payment states no amount; charge is %d", 10000), []string{"sem valor", "R$ 100,00"}},
		{PartsDoNotAddUp(10000, parts, parts.Sum()), fmt.Sprintf("paid %d, but its parts (%s) add up to %d", 10000, parts, parts.Sum()),
			[]string{"R$ 100,00", "original R$ 100,00 + juros R$ 2,50 − desconto R$ 1,00", "R$ 101,50"}},
		{OriginalIsNotCharge(10150, 10000, parts, 9000), fmt.Sprintf("paid %d of which the sale (original) is %d (%s), charge is %d",
			10150, 10000, parts, 9000), []string{"R$ 101,50", "R$ 100,00", "juros R$ 2,50", "R$ 90,00"}},
		{PartsLeaveNothingPaid(10150, 0, 9000, parts), fmt.Sprintf("paid %d of which %d for the charge of %d: its parts (%s) leave nothing paid",
			10150, 0, 9000, parts), []string{"R$ 101,50", "R$ 0,00", "R$ 90,00", "desconto R$ 1,00"}},
		{PaidOtherAmount(123456789, 10000), fmt.Sprintf("paid %d, charge is %d", 123456789, 10000), []string{"R$ 1.234.567,89", "R$ 100,00"}},
		{FeeOutOfRange(-5, 10000), fmt.Sprintf("PSP fee %d on a payment of %d", -5, 10000), []string{"−R$ 0,05", "R$ 100,00"}},
		{RefundWithoutID(), "refund without a refund id", []string{"estorno sem id"}},
		{RefundOfOtherPayment("rf-1", "psp:E2", "psp:E1"), fmt.Sprintf("refund %s is of payment %s; the charge was paid by %s", "rf-1", "psp:E2", "psp:E1"),
			[]string{"rf-1", "psp:E2", "psp:E1"}},
		{RefundOfCashOut("D1", 2000, 10000), fmt.Sprintf("refund %s of %d is of the cash handed over the counter (natureza RETIRADA), not of the sale of %d: not booked as a refund of the sale",
			"D1", 2000, 10000), []string{"D1", "R$ 20,00", "R$ 100,00", "RETIRADA"}},
		{RefundRestated("rf-1", 2000, "D1", 2500), fmt.Sprintf("refund %s was booked for %d as %s; now stated as %d", "rf-1", 2000, "D1", 2500),
			[]string{"rf-1", "R$ 20,00", "D1", "R$ 25,00"}},
		{RefundWithoutAmount("rf-1"), fmt.Sprintf("refund %s states no amount", "rf-1"), []string{"rf-1", "sem valor"}},
		{RefundExceedsLeft("rf-1", 5000, 3000, 10000), fmt.Sprintf("refund %s of %d; %d of %d left to refund", "rf-1", 5000, 3000, 10000),
			[]string{"rf-1", "R$ 50,00", "R$ 30,00", "R$ 100,00"}},
		{StatedAgain(false, "evt-1", "charge.paid", Figures{Amount: &amount, Fee: &fee}, 41, Figures{}),
			fmt.Sprintf("the PSP stated %s %s (%s) as %s in delivery %d; now as %s: the same id with other figures",
				"payment", "evt-1", "charge.paid", "12345 (fee 35)", 41, "no amount"),
			[]string{"pagamento evt-1", "charge.paid", "R$ 123,45 (tarifa R$ 0,35)", "entrega 41", "sem valor"}},
		{StatedAgain(true, "evt-2", "refund.succeeded", Figures{Amount: &amount}, 42, Figures{Fee: &fee}),
			fmt.Sprintf("the PSP stated %s %s (%s) as %s in delivery %d; now as %s: the same id with other figures",
				"refund", "evt-2", "refund.succeeded", "12345", 42, "no amount (fee 35)"),
			[]string{"estorno evt-2", "R$ 123,45", "entrega 42", "sem valor (tarifa R$ 0,35)"}},
		{RefundParkedTooLong(72*time.Hour, "ord-9"), fmt.Sprintf("refund parked for over %s waiting for the payment of %s", 72*time.Hour, "ord-9"),
			[]string{"3 dias", "ord-9"}},
		// The reconciliation's, written in SQL by reconcile's foundSQL.
		{say(CodeStatementAmount, int64(12345), int64(10000)), fmt.Sprintf("the statement says %s, the ledger has %s", "12345", "10000"),
			[]string{"extrato", "R$ 123,45", "R$ 100,00"}},
		{say(CodeStatementFee, int64(40), int64(0)), fmt.Sprintf("the statement's fee is %s, the fee booked %s", "40", "0"),
			[]string{"tarifa", "R$ 0,40", "R$ 0,00"}},
		{say(CodeStatementLine, "paid", "unknown_charge"), fmt.Sprintf("a %s line of the statement: %s", "paid", "unknown_charge"),
			[]string{"linha de pagamento do extrato", "cobrança desconhecida"}},
		{say(CodePhantom), "booked in the ledger, absent from the statement", []string{"ausente do extrato"}},
		{say(CodeLineText, "line 7: amount: not a number"), "line 7: amount: not a number", []string{"“line 7: amount: not a number”"}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.said.Code+"/"+tc.old, func(t *testing.T) {
			seen[tc.said.Code] = true
			if got := tc.said.English(); got != tc.old {
				t.Errorf("English = %q\nwant       %q", got, tc.old)
			}
			pt := tc.said.Portuguese()
			for _, want := range tc.pt {
				if !strings.Contains(pt, want) {
					t.Errorf("Portuguese %q does not say %q", pt, want)
				}
			}
			if strings.Contains(pt, "%!") {
				t.Errorf("Portuguese %q: a verb without its argument", pt)
			}
			code, args, err := tc.said.stored()
			if err != nil || code == nil || *code != tc.said.Code {
				t.Fatalf("stored = %v, %v, %v", code, args, err)
			}
			back := readSaid(*code, []byte(*args))
			if back.English() != tc.old || back.Portuguese() != pt {
				t.Errorf("read back from %s %s: %q / %q", *code, *args, back.English(), back.Portuguese())
			}
		})
	}
	for code := range sayings {
		if !seen[code] {
			t.Errorf("detail %s has no case here", code)
		}
	}
}

// A detail this build cannot read (no code: a row opened before codes
// were stored; a code of a newer build; arguments of the wrong shape)
// says nothing, and the console falls back to the stored English.
func TestAnUnreadableDetailFallsBackToTheStoredEnglish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ code, args string }{
		{"", ""}, {"from_the_future", `[1]`}, {"second_payment", `["a", "b"]`}, {"second_payment", `["a", "b", "c"]`},
		{"second_payment", `{}`},
	} {
		d := Divergence{Detail: "charge already paid by x", Said: readSaid(tc.code, []byte(tc.args))}
		if got := d.DetailPT(); got != d.Detail {
			t.Errorf("%s %s: DetailPT = %q, want the stored English", tc.code, tc.args, got)
		}
	}
}
