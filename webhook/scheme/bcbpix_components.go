package scheme

import (
	"fmt"
	"strings"

	"github.com/razao/razao/money"
)

// Components is what a Pix's valor is made of (componentesValor): its
// parts in centavos, and for a Pix Saque or Pix Troco the agent who
// handed the cash over, kept for audit (nothing booked from it).
type Components struct {
	money.Parts
	// Agent is the saque's or troco's modalidadeAgente (AGTEC, AGTOT,
	// AGPSS) and Provider its prestadorDoServicoDeSaque (an ISPB).
	Agent    string `json:",omitempty"`
	Provider string `json:",omitempty"`
}

// Parts is the event's parts, the zero Parts when it states none.
func (e Event) Parts() money.Parts {
	if e.Components == nil {
		return money.Parts{}
	}
	return e.Components.Parts
}

// bcbComponentKeys are componentesValor's parts, in the spec's words.
var bcbComponentKeys = []string{"original", "saque", "troco", "juros", "multa", "abatimento", "desconto"}

// bcbParts reads a Pix item's componentesValor, nil when it has none: an
// object of parts, each {valor} (and for saque and troco the agent). The
// spec's own examples spell the provider prestadorDeServicoDeSaque where
// its schema says prestadorDoServicoDeSaque: both are read. Unknown parts
// are a compatible change the spec allows, and are left alone.
// Only the parts' shape is checked here: whether they add up to valor,
// and what they mean for the charge, is the charge's to decide (a
// divergence with both sides, not a refused callback).
func bcbParts(item object) (*Components, error) {
	if !item.has("componentesValor") {
		return nil, nil
	}
	cv, err := item.object("componentesValor")
	if err != nil {
		return nil, err
	}
	c := &Components{}
	amounts := []*int64{&c.Original, &c.Withdrawal, &c.Change, &c.Interest, &c.Fine, &c.Rebate, &c.Discount}
	for i, key := range bcbComponentKeys {
		if !cv.has(key) {
			continue
		}
		part, err := cv.object(key)
		if err != nil {
			return nil, err
		}
		if *amounts[i], err = bcbPartValor(part); err != nil {
			return nil, err
		}
		if key != "saque" && key != "troco" {
			continue
		}
		for _, k := range []string{"modalidadeAgente", "prestadorDoServicoDeSaque", "prestadorDeServicoDeSaque"} {
			v, err := part.optStr(k)
			if err != nil {
				return nil, err
			}
			if len(v) > bcbMaxAgentLen {
				return nil, malformed(part.field(k), fmt.Sprintf("must be at most %d characters", bcbMaxAgentLen))
			}
			if v == "" {
				continue
			}
			if k == "modalidadeAgente" {
				c.Agent = v
			} else {
				c.Provider = v
			}
		}
	}
	if !c.Parts.Stated() && c.Agent == "" {
		// {} or only parts of zero: says nothing beyond valor.
		return nil, nil
	}
	return c, nil
}

// bcbMaxAgentLen bounds what is kept of an agent's fields (an ISPB is 8
// characters; the modalities 5).
const bcbMaxAgentLen = 35

// bcbPartValor reads a part's valor, \d{1,10}\.\d{2} like valor itself,
// but 0.00 allowed: a Pix Saque may state original as 0.00.
func bcbPartValor(part object) (int64, error) {
	v, ok := part.m["valor"].(string)
	whole, frac, dot := strings.Cut(v, ".")
	if !ok || !dot || !isDigits(whole) || len(whole) > bcbMaxValorWhole ||
		len(frac) != 2 || !isDigits(frac) {
		return 0, malformed(part.field("valor"), `must be a string of the form \d{1,10}\.\d{2}`)
	}
	if strings.Trim(whole+frac, "0") == "" {
		return 0, nil
	}
	amount, _, err := part.reais("valor")
	return amount, err
}
