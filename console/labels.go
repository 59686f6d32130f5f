package console

import (
	"github.com/razao/razao/accounts"
	"github.com/razao/razao/divergences"
)

// labels are the Portuguese words the console shows for the values the
// books store in English: what finance reads is never a column's code.
// One table per kind of value, so a page says {{pt "charge" .State}} and
// a value no table knows is shown as stored (never blank), which a test
// over every CHECK constraint's values keeps from happening.
var labels = map[string]map[string]string{
	"charge": {
		"pending":            "pendente",
		"paid":               "paga",
		"partially_refunded": "parcialmente estornada",
		"refunded":           "estornada",
		"failed":             "falhou",
	},
	"delivery": { // inbox.status
		"pending":   "na fila",
		"processed": "processada",
		"parked":    "em espera",
		"divergent": "divergente",
		"ignored":   "ignorada",
	},
	"event": { // inbox.kind
		"paid":       "pagamento",
		"refunded":   "estorno",
		"failed":     "falha",
		"ignored":    "ignorado",
		"disputed":   "contestação",
		"malformed":  "malformado",
		"unbookable": "não contabilizável",
	},
	"set": { // posting_sets.kind
		"sale":                "venda",
		"commission":          "comissão",
		"refund":              "estorno",
		"commission_reversal": "estorno de comissão",
		"payout":              "repasse",
		"adjustment":          "ajuste",
	},
	"divergence": { // divergences.status
		"open":     "aberta",
		"resolved": "resolvida",
	},
	"reason": reasonNames(), // divergences.reason: the divergences package names them
	"resolution": { // divergences.resolution
		"customer_credit":   "crédito ao cliente",
		"revenue":           "receita",
		"credit_refund":     "devolução do crédito",
		"loss":              "perda",
		"refund_difference": "diferença de estorno",
		"fee_difference":    "diferença de tarifa",
	},
	"adjustment": { // adjustments.status
		"proposed": "proposto",
		"booked":   "lançado",
		"rejected": "recusado",
		"expired":  "expirado",
	},
	"adjustment_kind": { // adjustments.kind
		"adjustment": "ajuste",
		"reversal":   "estorno de lançamento",
	},
	"run": { // reconciliation_runs.status, export_runs.status
		"running":   "em andamento",
		"waiting":   "aguardando",
		"succeeded": "concluída",
		"failed":    "falhou",
	},
	"outcome": { // reconciliation_lines.outcome
		"matched":    "conferida",
		"booked":     "lançada",
		"divergence": "divergência",
	},
	"line": { // reconciliation_lines.kind
		"paid":        "pagamento",
		"refunded":    "estorno",
		"refund_open": "estorno em aberto",
		"invalid":     "inválida",
	},
	"type": { // accounts.type
		"asset":     "ativo",
		"liability": "passivo",
		"equity":    "patrimônio líquido",
		"income":    "receita",
		"expense":   "despesa",
	},
	"disabled_reason": { // webhook_endpoints.disabled_reason
		"operator": "desativado por um operador",
		"failing":  "desativado após falhar todas as tentativas",
	},
	"period": { // periods.Period.Status
		"open":   "aberto",
		"closed": "fechado",
	},
	"side": { // accounts.normal_side
		"debit":  "devedora",
		"credit": "credora",
	},
}

// pt is the Portuguese word for value of kind, or value itself when the
// table has none (a new value shows as stored until it is named here).
func pt(kind, value string) string {
	if w, ok := labels[kind][value]; ok {
		return w
	}
	return value
}

// accountName is the account's Portuguese name (accounts.Name: the chart's,
// and "Comissões a pagar — <partner>" for a partner's payable).
func accountName(code string) string { return accounts.Name(code) }

// reasonNames are the divergences' reasons in Portuguese, as their
// package names them (its details name them too).
func reasonNames() map[string]string {
	out := make(map[string]string, len(divergences.ReasonNames))
	for r, name := range divergences.ReasonNames {
		out[string(r)] = name
	}
	return out
}
