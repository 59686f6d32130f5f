package reports_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

var (
	jul2026 = periods.Month{Year: 2026, Month: time.July}
	aug2026 = periods.Month{Year: 2026, Month: time.August}
	sep2026 = periods.Month{Year: 2026, Month: time.September}
	oct2026 = periods.Month{Year: 2026, Month: time.October}
)

// afterSeptember is a clock reading when August and September are over in
// São Paulo.
var afterSeptember = time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)

func exportCSV(t *testing.T, q sqlx.QueryerContext, kind reports.ExportKind, m periods.Month, d reports.Dialect) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := reports.WriteCSV(context.Background(), q, monthsums.Books{}, &b, kind, m, d); err != nil {
		t.Fatalf("export %s %s %s: %v", kind, m, d, err)
	}
	return b.String()
}

// portuguese are the Brazilian dialect's headers, by the RFC 4180 name of
// their column.
var portuguese = map[string]string{
	"Lançamento": "posting_set_id", "Tipo": "kind", "Competência": "competence", "Data e hora do evento": "event_at",
	"Cobrança": "charge_id", "Devolução": "refund_id", "Parceiro": "partner", "Chave de idempotência": "idempotency_key",
	"Descrição": "description", "Partida": "posting_id", "Conta": "account", "Moeda": "currency", "Valor": "amount",
	"Valor em centavos": "amount_centavos",
}

// columnsOf indexes a journal's header by the RFC 4180 names, whichever
// dialect it is in.
func columnsOf(header []string) map[string]int {
	col := map[string]int{}
	for i, name := range header {
		if en, ok := portuguese[name]; ok {
			name = en
		}
		col[name] = i
	}
	return col
}
