package reports_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/razao/razao/internal/ledgertest"
	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// file joins lines as a CSV file does: every line ends in CRLF.
func file(lines ...string) string { return strings.Join(lines, "\r\n") + "\r\n" }

const bom = "\xEF\xBB\xBF"

var (
	tbAugustRFC = file(
		"month,account,type,currency,opening,debits,credits,closing,opening_centavos,debits_centavos,credits_centavos,closing_centavos",
		"2026-08,assets,asset,BRL,0.00,172.65,5.00,167.65,0,17265,500,16765",
		"2026-08,assets:cash,asset,BRL,0.00,172.65,5.00,167.65,0,17265,500,16765",
		"2026-08,expenses,expense,BRL,0.00,14.74,0.00,14.74,0,1474,0,1474",
		"2026-08,expenses:commission,expense,BRL,0.00,12.49,0.00,12.49,0,1249,0,1249",
		"2026-08,expenses:psp-fees,expense,BRL,0.00,2.25,0.00,2.25,0,225,0,225",
		"2026-08,income,income,BRL,0.00,0.00,174.90,-174.90,0,0,17490,-17490",
		"2026-08,income:revenue,income,BRL,0.00,0.00,174.90,-174.90,0,0,17490,-17490",
		"2026-08,liabilities,liability,BRL,0.00,5.00,12.49,-7.49,0,500,1249,-749",
		"2026-08,liabilities:commission-payable,liability,BRL,0.00,5.00,12.49,-7.49,0,500,1249,-749",
		"2026-08,liabilities:commission-payable:p1,liability,BRL,0.00,5.00,10.00,-5.00,0,500,1000,-500",
		"2026-08,liabilities:commission-payable:p2,liability,BRL,0.00,0.00,2.49,-2.49,0,0,249,-249",
		"2026-08,TOTAL,,BRL,0.00,192.39,192.39,0.00,0,19239,19239,0",
	)
	tbSeptemberRFC = file(
		"month,account,type,currency,opening,debits,credits,closing,opening_centavos,debits_centavos,credits_centavos,closing_centavos",
		"2026-09,assets,asset,BRL,167.65,29.55,112.00,85.20,16765,2955,11200,8520",
		"2026-09,assets:cash,asset,BRL,167.65,29.55,112.00,85.20,16765,2955,11200,8520",
		"2026-09,expenses,expense,BRL,14.74,3.45,10.49,7.70,1474,345,1049,770",
		"2026-09,expenses:commission,expense,BRL,12.49,3.00,10.49,5.00,1249,300,1049,500",
		"2026-09,expenses:psp-fees,expense,BRL,2.25,0.45,0.00,2.70,225,45,0,270",
		"2026-09,income,income,BRL,-174.90,110.00,30.00,-94.90,-17490,11000,3000,-9490",
		"2026-09,income:revenue,income,BRL,-174.90,110.00,30.00,-94.90,-17490,11000,3000,-9490",
		"2026-09,liabilities,liability,BRL,-7.49,12.49,3.00,2.00,-749,1249,300,200",
		"2026-09,liabilities:commission-payable,liability,BRL,-7.49,12.49,3.00,2.00,-749,1249,300,200",
		"2026-09,liabilities:commission-payable:p1,liability,BRL,-5.00,10.00,3.00,2.00,-500,1000,300,200",
		"2026-09,liabilities:commission-payable:p2,liability,BRL,-2.49,2.49,0.00,0.00,-249,249,0,0",
		"2026-09,TOTAL,,BRL,0.00,155.49,155.49,0.00,0,15549,15549,0",
	)
	incomeAugustRFC = file(
		"month,currency,line,count,amount,amount_centavos",
		"2026-08,BRL,sales,3,174.90,17490",
		"2026-08,BRL,refunds,0,0.00,0",
		"2026-08,BRL,net_revenue,,174.90,17490",
		"2026-08,BRL,commission,,12.49,1249",
		"2026-08,BRL,psp_fees,,2.25,225",
		"2026-08,BRL,other,,0.00,0",
		"2026-08,BRL,net_income,,160.16,16016",
	)
	incomeSeptemberRFC = file(
		"month,currency,line,count,amount,amount_centavos",
		"2026-09,BRL,sales,1,30.00,3000",
		"2026-09,BRL,refunds,3,110.00,11000",
		"2026-09,BRL,net_revenue,,-80.00,-8000",
		"2026-09,BRL,commission,,-7.49,-749",
		"2026-09,BRL,psp_fees,,0.45,45",
		"2026-09,BRL,other,,0.00,0",
		"2026-09,BRL,net_income,,-72.96,-7296",
	)
	journalAugustRFC = file(
		"posting_set_id,kind,competence,event_at,charge_id,refund_id,partner,idempotency_key,description,posting_id,account,currency,amount,amount_centavos",
		"1,sale,2026-08-05,2026-08-05T13:00:00Z,c1,,,sale:c1,,1,assets:cash,BRL,98.50,9850",
		"1,sale,2026-08-05,2026-08-05T13:00:00Z,c1,,,sale:c1,,2,expenses:psp-fees,BRL,1.50,150",
		"1,sale,2026-08-05,2026-08-05T13:00:00Z,c1,,,sale:c1,,3,income:revenue,BRL,-100.00,-10000",
		"2,commission,2026-08-05,2026-08-05T13:00:00Z,c1,,p1,commission:c1,,4,expenses:commission,BRL,10.00,1000",
		"2,commission,2026-08-05,2026-08-05T13:00:00Z,c1,,p1,commission:c1,,5,liabilities:commission-payable:p1,BRL,-10.00,-1000",
		// Paid 22:30 on 31 August in São Paulo: August, though UTC says September.
		"3,sale,2026-08-31,2026-09-01T01:30:00Z,c2,,,sale:c2,,6,assets:cash,BRL,49.15,4915",
		"3,sale,2026-08-31,2026-09-01T01:30:00Z,c2,,,sale:c2,,7,expenses:psp-fees,BRL,0.75,75",
		"3,sale,2026-08-31,2026-09-01T01:30:00Z,c2,,,sale:c2,,8,income:revenue,BRL,-49.90,-4990",
		"4,commission,2026-08-31,2026-09-01T01:30:00Z,c2,,p2,commission:c2,,9,expenses:commission,BRL,2.49,249",
		"4,commission,2026-08-31,2026-09-01T01:30:00Z,c2,,p2,commission:c2,,10,liabilities:commission-payable:p2,BRL,-2.49,-249",
		"5,sale,2026-08-20,2026-08-20T12:15:00Z,c3,,,sale:c3,\"'=SOMA(1;2)\",11,assets:cash,BRL,25.00,2500",
		"5,sale,2026-08-20,2026-08-20T12:15:00Z,c3,,,sale:c3,\"'=SOMA(1;2)\",12,income:revenue,BRL,-25.00,-2500",
		`6,payout,2026-08-28,2026-08-28T20:00:00Z,,,p1,payout:p1:2026-08,"Repasse de agosto, ""p1""; à vista",13,liabilities:commission-payable:p1,BRL,5.00,500`,
		`6,payout,2026-08-28,2026-08-28T20:00:00Z,,,p1,payout:p1:2026-08,"Repasse de agosto, ""p1""; à vista",14,assets:cash,BRL,-5.00,-500`,
	)
	journalSeptemberRFC = file(
		"posting_set_id,kind,competence,event_at,charge_id,refund_id,partner,idempotency_key,description,posting_id,account,currency,amount,amount_centavos",
		"7,refund,2026-09-03,2026-09-03T14:00:00Z,c1,r1,,refund:2:c1:r1,,15,income:revenue,BRL,40.00,4000",
		"7,refund,2026-09-03,2026-09-03T14:00:00Z,c1,r1,,refund:2:c1:r1,,16,assets:cash,BRL,-40.00,-4000",
		"8,commission_reversal,2026-09-03,2026-09-03T14:00:00Z,c1,r1,p1,commission_reversal:2:c1:r1,,17,liabilities:commission-payable:p1,BRL,4.00,400",
		"8,commission_reversal,2026-09-03,2026-09-03T14:00:00Z,c1,r1,p1,commission_reversal:2:c1:r1,,18,expenses:commission,BRL,-4.00,-400",
		"9,refund,2026-09-10,2026-09-10T19:45:00Z,c2,r1,,refund:2:c2:r1,,19,income:revenue,BRL,10.00,1000",
		"9,refund,2026-09-10,2026-09-10T19:45:00Z,c2,r1,,refund:2:c2:r1,,20,assets:cash,BRL,-10.00,-1000",
		"10,commission_reversal,2026-09-10,2026-09-10T19:45:00Z,c2,r1,p2,commission_reversal:2:c2:r1,,21,liabilities:commission-payable:p2,BRL,0.49,49",
		"10,commission_reversal,2026-09-10,2026-09-10T19:45:00Z,c2,r1,p2,commission_reversal:2:c2:r1,,22,expenses:commission,BRL,-0.49,-49",
		"11,sale,2026-09-15,2026-09-15T11:00:00Z,c4,,,sale:c4,,23,assets:cash,BRL,29.55,2955",
		"11,sale,2026-09-15,2026-09-15T11:00:00Z,c4,,,sale:c4,,24,expenses:psp-fees,BRL,0.45,45",
		"11,sale,2026-09-15,2026-09-15T11:00:00Z,c4,,,sale:c4,,25,income:revenue,BRL,-30.00,-3000",
		"12,commission,2026-09-15,2026-09-15T11:00:00Z,c4,,p1,commission:c4,,26,expenses:commission,BRL,3.00,300",
		"12,commission,2026-09-15,2026-09-15T11:00:00Z,c4,,p1,commission:c4,,27,liabilities:commission-payable:p1,BRL,-3.00,-300",
		"13,refund,2026-09-20,2026-09-20T13:00:00Z,c1,r2,,refund:2:c1:r2,,28,income:revenue,BRL,60.00,6000",
		"13,refund,2026-09-20,2026-09-20T13:00:00Z,c1,r2,,refund:2:c1:r2,,29,assets:cash,BRL,-60.00,-6000",
		"14,commission_reversal,2026-09-20,2026-09-20T13:00:00Z,c1,r2,p1,commission_reversal:2:c1:r2,,30,liabilities:commission-payable:p1,BRL,6.00,600",
		"14,commission_reversal,2026-09-20,2026-09-20T13:00:00Z,c1,r2,p1,commission_reversal:2:c1:r2,,31,expenses:commission,BRL,-6.00,-600",
		"15,payout,2026-09-25,2026-09-25T20:00:00Z,,,p2,payout:p2:2026-09,,32,liabilities:commission-payable:p2,BRL,2.00,200",
		"15,payout,2026-09-25,2026-09-25T20:00:00Z,,,p2,payout:p2:2026-09,,33,assets:cash,BRL,-2.00,-200",
	)
	tbAugustBR = file(
		bom+"Mês;Conta;Tipo;Moeda;Saldo inicial;Débitos;Créditos;Saldo final;Saldo inicial em centavos;Débitos em centavos;Créditos em centavos;Saldo final em centavos",
		"2026-08;assets;asset;BRL;0,00;172,65;5,00;167,65;0;17265;500;16765",
		"2026-08;assets:cash;asset;BRL;0,00;172,65;5,00;167,65;0;17265;500;16765",
		"2026-08;expenses;expense;BRL;0,00;14,74;0,00;14,74;0;1474;0;1474",
		"2026-08;expenses:commission;expense;BRL;0,00;12,49;0,00;12,49;0;1249;0;1249",
		"2026-08;expenses:psp-fees;expense;BRL;0,00;2,25;0,00;2,25;0;225;0;225",
		"2026-08;income;income;BRL;0,00;0,00;174,90;-174,90;0;0;17490;-17490",
		"2026-08;income:revenue;income;BRL;0,00;0,00;174,90;-174,90;0;0;17490;-17490",
		"2026-08;liabilities;liability;BRL;0,00;5,00;12,49;-7,49;0;500;1249;-749",
		"2026-08;liabilities:commission-payable;liability;BRL;0,00;5,00;12,49;-7,49;0;500;1249;-749",
		"2026-08;liabilities:commission-payable:p1;liability;BRL;0,00;5,00;10,00;-5,00;0;500;1000;-500",
		"2026-08;liabilities:commission-payable:p2;liability;BRL;0,00;0,00;2,49;-2,49;0;0;249;-249",
		"2026-08;TOTAL;;BRL;0,00;192,39;192,39;0,00;0;19239;19239;0",
	)
	incomeSeptemberBR = file(
		bom+"Mês;Moeda;Linha;Quantidade;Valor;Valor em centavos",
		"2026-09;BRL;sales;1;30,00;3000",
		"2026-09;BRL;refunds;3;110,00;11000",
		"2026-09;BRL;net_revenue;;-80,00;-8000",
		"2026-09;BRL;commission;;-7,49;-749",
		"2026-09;BRL;psp_fees;;0,45;45",
		"2026-09;BRL;other;;0,00;0",
		"2026-09;BRL;net_income;;-72,96;-7296",
	)
	journalAugustBR = file(
		bom+"Lançamento;Tipo;Competência;Data e hora do evento;Cobrança;Devolução;Parceiro;Chave de idempotência;Descrição;Partida;Conta;Moeda;Valor;Valor em centavos",
		"1;sale;2026-08-05;2026-08-05T10:00:00-03:00;c1;;;sale:c1;;1;assets:cash;BRL;98,50;9850",
		"1;sale;2026-08-05;2026-08-05T10:00:00-03:00;c1;;;sale:c1;;2;expenses:psp-fees;BRL;1,50;150",
		"1;sale;2026-08-05;2026-08-05T10:00:00-03:00;c1;;;sale:c1;;3;income:revenue;BRL;-100,00;-10000",
		"2;commission;2026-08-05;2026-08-05T10:00:00-03:00;c1;;p1;commission:c1;;4;expenses:commission;BRL;10,00;1000",
		"2;commission;2026-08-05;2026-08-05T10:00:00-03:00;c1;;p1;commission:c1;;5;liabilities:commission-payable:p1;BRL;-10,00;-1000",
		// The sale paid 22:30 on 31 August in São Paulo, at that time.
		"3;sale;2026-08-31;2026-08-31T22:30:00-03:00;c2;;;sale:c2;;6;assets:cash;BRL;49,15;4915",
		"3;sale;2026-08-31;2026-08-31T22:30:00-03:00;c2;;;sale:c2;;7;expenses:psp-fees;BRL;0,75;75",
		"3;sale;2026-08-31;2026-08-31T22:30:00-03:00;c2;;;sale:c2;;8;income:revenue;BRL;-49,90;-4990",
		"4;commission;2026-08-31;2026-08-31T22:30:00-03:00;c2;;p2;commission:c2;;9;expenses:commission;BRL;2,49;249",
		"4;commission;2026-08-31;2026-08-31T22:30:00-03:00;c2;;p2;commission:c2;;10;liabilities:commission-payable:p2;BRL;-2,49;-249",
		// A formula is defused with an apostrophe, and quoted for its ";".
		`5;sale;2026-08-20;2026-08-20T09:15:00-03:00;c3;;;sale:c3;"'=SOMA(1;2)";11;assets:cash;BRL;25,00;2500`,
		`5;sale;2026-08-20;2026-08-20T09:15:00-03:00;c3;;;sale:c3;"'=SOMA(1;2)";12;income:revenue;BRL;-25,00;-2500`,
		`6;payout;2026-08-28;2026-08-28T17:00:00-03:00;;;p1;payout:p1:2026-08;"Repasse de agosto, ""p1""; à vista";13;liabilities:commission-payable:p1;BRL;5,00;500`,
		`6;payout;2026-08-28;2026-08-28T17:00:00-03:00;;;p1;payout:p1:2026-08;"Repasse de agosto, ""p1""; à vista";14;assets:cash;BRL;-5,00;-500`,
	)
)

// TestCSVGoldenOfScriptedMonths pins the exact bytes of every export of
// both scripted months, after September's refunds of August sales.
func TestCSVGoldenOfScriptedMonths(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	tests := []struct {
		kind    reports.ExportKind
		month   periods.Month
		dialect reports.Dialect
		rows    int64
		want    string
	}{
		{reports.ExportTrialBalance, aug2026, reports.RFC4180, 12, tbAugustRFC},
		{reports.ExportTrialBalance, sep2026, reports.RFC4180, 12, tbSeptemberRFC},
		{reports.ExportIncomeStatement, aug2026, reports.RFC4180, 7, incomeAugustRFC},
		{reports.ExportIncomeStatement, sep2026, reports.RFC4180, 7, incomeSeptemberRFC},
		{reports.ExportJournal, aug2026, reports.RFC4180, 14, journalAugustRFC},
		{reports.ExportJournal, sep2026, reports.RFC4180, 19, journalSeptemberRFC},
		{reports.ExportTrialBalance, aug2026, reports.Brazil, 12, tbAugustBR},
		{reports.ExportIncomeStatement, sep2026, reports.Brazil, 7, incomeSeptemberBR},
		{reports.ExportJournal, aug2026, reports.Brazil, 14, journalAugustBR},
	}
	for _, tt := range tests {
		t.Run(reports.FileName(tt.kind, tt.month, tt.dialect), func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			n, err := reports.WriteCSV(context.Background(), db, monthsums.Books{}, &b, tt.kind, tt.month, tt.dialect)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.rows {
				t.Errorf("%d rows, want %d", n, tt.rows)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("bytes differ\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestCSVExportsAreDeterministic exports every kind in both dialects twice
// and compares the bytes.
func TestCSVExportsAreDeterministic(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	ledgertest.PostSeptember(t, l)
	for _, kind := range []reports.ExportKind{reports.ExportJournal, reports.ExportTrialBalance, reports.ExportIncomeStatement} {
		for _, d := range []reports.Dialect{reports.RFC4180, reports.Brazil} {
			for _, m := range []periods.Month{aug2026, sep2026, oct2026} {
				first, second := exportCSV(t, db, kind, m, d), exportCSV(t, db, kind, m, d)
				if first != second {
					t.Errorf("%s differs between two exports:\n%q\n%q", reports.FileName(kind, m, d), first, second)
				}
			}
		}
	}
}

// TestBrazilDialectParsesBack reads the br journal as a spreadsheet would:
// a BOM, ";" columns, decimal commas, quoted text intact.
func TestBrazilDialectParsesBack(t *testing.T) {
	t.Parallel()
	l, db := ledgertest.New(t)
	ledgertest.PostAugust(t, l)
	raw := exportCSV(t, db, reports.ExportJournal, aug2026, reports.Brazil)
	body, ok := strings.CutPrefix(raw, bom)
	if !ok {
		t.Fatalf("no UTF-8 BOM: %q", raw[:10])
	}
	r := csv.NewReader(strings.NewReader(body))
	r.Comma = ';'
	records, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := []string{"Lançamento", "Tipo", "Competência", "Data e hora do evento", "Cobrança", "Devolução", "Parceiro",
		"Chave de idempotência", "Descrição", "Partida", "Conta", "Moeda", "Valor", "Valor em centavos"}
	if !reflect.DeepEqual(records[0], wantHeader) {
		t.Fatalf("header %q", records[0])
	}
	if len(records) != 15 {
		t.Fatalf("%d records, want header + 14", len(records))
	}
	col := columnsOf(records[0])
	for _, c := range []struct {
		row       int
		name, val string
	}{
		{1, "account", "assets:cash"},
		{1, "amount", "98,50"},
		{1, "amount_centavos", "9850"},
		{1, "event_at", "2026-08-05T10:00:00-03:00"},
		{6, "event_at", "2026-08-31T22:30:00-03:00"},
		{3, "amount", "-100,00"},
		{11, "description", "'=SOMA(1;2)"},
		{13, "description", `Repasse de agosto, "p1"; à vista`},
		{13, "partner", "p1"},
	} {
		if got := records[c.row][col[c.name]]; got != c.val {
			t.Errorf("row %d %s = %q, want %q", c.row, c.name, got, c.val)
		}
	}
}

// TestWriteCSVRefusesBeforeWriting: a refusal leaves the writer untouched,
// so the HTTP layer can still answer with an error status.
func TestWriteCSVRefusesBeforeWriting(t *testing.T) {
	t.Parallel()
	_, db := ledgertest.New(t)
	tests := []struct {
		name  string
		kind  reports.ExportKind
		month periods.Month
		d     reports.Dialect
		err   error
	}{
		{"unknown kind", "ledger", aug2026, reports.RFC4180, reports.ErrUnknownKind},
		{"unknown dialect", reports.ExportJournal, aug2026, reports.Dialect(7), reports.ErrUnknownDialect},
		{"invalid month", reports.ExportJournal, periods.Month{Year: 2026}, reports.RFC4180, reports.ErrInvalidMonth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if _, err := reports.WriteCSV(context.Background(), db, monthsums.Books{}, &b, tt.kind, tt.month, tt.d); !errors.Is(err, tt.err) {
				t.Errorf("err %v, want %v", err, tt.err)
			}
			if b.Len() != 0 {
				t.Errorf("wrote %q", b.String())
			}
		})
	}
}

func TestParseDialectAndKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]reports.Dialect{"": reports.RFC4180, "rfc4180": reports.RFC4180, "br": reports.Brazil} {
		if d, err := reports.ParseDialect(in); err != nil || d != want {
			t.Errorf("ParseDialect(%q) = %v, %v", in, d, err)
		}
	}
	if _, err := reports.ParseDialect("excel"); !errors.Is(err, reports.ErrUnknownDialect) {
		t.Errorf("ParseDialect(excel): %v", err)
	}
	for _, in := range []string{"journal", "trial-balance", "income-statement"} {
		if k, err := reports.ParseExportKind(in); err != nil || string(k) != in {
			t.Errorf("ParseExportKind(%q) = %v, %v", in, k, err)
		}
	}
	if _, err := reports.ParseExportKind("balances"); !errors.Is(err, reports.ErrUnknownKind) {
		t.Errorf("ParseExportKind(balances): %v", err)
	}
	if got := reports.FileName(reports.ExportJournal, aug2026, reports.Brazil); got != "razao-journal-2026-08-br.csv" {
		t.Errorf("file name %s", got)
	}
}
