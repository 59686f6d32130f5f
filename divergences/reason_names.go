package divergences

// ReasonNames are the reasons in Portuguese, as finance reads them in the
// console (its labels take them from here) and inside a detail that names
// a reason.
var ReasonNames = map[Reason]string{
	"unknown_charge":            "cobrança desconhecida",
	"amount_mismatch":           "valor diferente",
	"currency_mismatch":         "moeda diferente",
	"refund_exceeds_paid":       "estorno maior que o pago",
	"refund_amount_missing":     "estorno sem valor",
	"malformed":                 "mensagem malformada",
	"disputed":                  "contestação",
	"second_payment":            "segundo pagamento",
	"processing_failed":         "falha no processamento",
	"refund_of_other_payment":   "estorno de outro pagamento",
	"refund_amount_changed":     "valor do estorno alterado",
	"refund_without_payment":    "estorno sem pagamento",
	"merchant_mismatch":         "lojista diferente",
	"fee_mismatch":              "tarifa diferente",
	"refund_amount_mismatch":    "valor do estorno diferente",
	"refund_not_settled":        "estorno não liquidado",
	"phantom":                   "só no razão, não no extrato",
	"invalid_line":              "linha inválida no extrato",
	"divergent_in_inbox":        "divergente na caixa de entrada",
	"refund_settlement_unknown": "liquidação do estorno desconhecida",
	"unknown_refund_status":     "situação de estorno desconhecida",
	"unknown_refund_nature":     "natureza de estorno desconhecida",
}

// Portuguese is the reason as finance reads it, or the reason itself when
// it has no name yet.
func (r Reason) Portuguese() string {
	if name, ok := ReasonNames[r]; ok {
		return name
	}
	return string(r)
}
