package accounts

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/internal/cursor"
)

// names are the Portuguese names of the standard chart, as finance reads
// them (the plano de contas); a partner's sub-account is named by Name.
var names = map[string]string{
	"assets":             "Ativo",
	"liabilities":        "Passivo",
	"equity":             "Patrimônio líquido",
	"income":             "Receitas",
	"expenses":           "Despesas",
	Cash:                 "Caixa (saldo no PSP)",
	Till:                 "Caixa físico",
	TillWithdrawal:       "Caixa físico — Pix Saque",
	TillChange:           "Caixa físico — Pix Troco",
	CommissionPayable:    "Comissões a pagar",
	Adjustments:          "Ajustes",
	Revenue:              "Receita de vendas",
	Interest:             "Juros recebidos",
	Fines:                "Multas recebidas",
	PSPFees:              "Tarifas do PSP",
	CommissionExpense:    "Comissões de parceiros",
	MEDReturns:           "Devoluções MED",
	Rebates:              "Abatimentos concedidos",
	Discounts:            "Descontos concedidos",
	CustomerCredits:      "Créditos de clientes",
	ReconciliationLosses: "Perdas na conciliação",
}

// Name is the Portuguese name of the account code: the chart's own, or
// for a partner's commission payable "Comissões a pagar — <partner>". Any
// other code (a chart extended by hand) is named by its code.
func Name(code string) string {
	if n, ok := names[code]; ok {
		return n
	}
	if partner, ok := strings.CutPrefix(code, CommissionPayable+":"); ok {
		return names[CommissionPayable] + " — " + partner
	}
	return code
}

// ChartEntry is one account of the chart as finance reads it.
type ChartEntry struct {
	ID         int64  `db:"id" json:"id"`
	Code       string `db:"code" json:"code"`
	Name       string `db:"-" json:"name"`
	Type       Type   `db:"type" json:"type"`
	NormalSide string `db:"normal_side" json:"normal_side"`
	Currency   string `db:"currency" json:"currency"`
	// Parent is the code of the account's parent; "" for a root.
	Parent string `db:"parent" json:"parent,omitempty"`
}

// Chart returns a page of the chart: up to limit accounts (cursor.Limit)
// with an id above after, in id order (the primary key), each named
// (Name) and with its parent's code, and whether more follow.
func Chart(ctx context.Context, q sqlx.QueryerContext, after int64, limit int) ([]ChartEntry, bool, error) {
	limit = cursor.Limit(limit)
	var rows []struct {
		ChartEntry
		ParentCode sql.NullString `db:"parent_code"`
	}
	err := sqlx.SelectContext(ctx, q, &rows, `SELECT a.id, a.code, a.type, a.normal_side, a.currency, p.code AS parent_code
		FROM accounts a LEFT JOIN accounts p ON p.id = a.parent_id
		WHERE a.id > $1 ORDER BY a.id LIMIT $2`, after, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("chart of accounts: %w", err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out := make([]ChartEntry, len(rows))
	for i, r := range rows {
		out[i] = r.ChartEntry
		out[i].Name = Name(r.Code)
		out[i].Parent = r.ParentCode.String
	}
	return out, more, nil
}
