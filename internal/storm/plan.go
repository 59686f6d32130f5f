package storm

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// ChargePlan is one registered charge and what the PSP will say about it.
type ChargePlan struct {
	ID           string `json:"id"`
	Amount       int64  `json:"amount"`
	Partner      string `json:"partner"`
	CommissionBP int64  `json:"commission_bp"`
	// Paid is the confirmation. Twin: also sent, at the same moment, to a
	// second replica. Late: sent again after it was accepted.
	Paid Delivery `json:"paid"`
	Twin bool     `json:"twin"`
	Late bool     `json:"late"`
	// Refunds race the confirmation: all fire at the same moment.
	Refunds []RefundPlan `json:"refunds,omitempty"`
	// Group says when the charge is fired: "storm" (paced over the storm),
	// "outage" (the moment PostgreSQL is down), "kill" (held in flight on
	// a replica when it is killed) or "forged".
	Group string `json:"group"`
}

// RefundPlan is one refund with its PSP refund id; Twin as for payments.
type RefundPlan struct {
	Delivery
	Twin bool `json:"twin"`
}

// Commission is the commission razao must book: floor(A·r/10000).
func (c ChargePlan) Commission() int64 { return c.Amount * c.CommissionBP / 10000 }

// Plan is everything a storm will send.
type Plan struct {
	RunID   string       `json:"run_id"`
	Seed    uint64       `json:"seed"`
	Charges []ChargePlan `json:"charges"`
	// ForgedRefunds name real charges but are signed with the wrong key.
	ForgedRefunds []Delivery `json:"forged_refunds"`
}

// PlanOptions sizes a plan.
type PlanOptions struct {
	Charges       int // fired over the storm
	OutageCharges int // fired while PostgreSQL is down (per outage)
	Outages       int
	KillCharges   int // held in flight on a replica when it is killed (per kill)
	Kills         int
	Forged        int // charges whose only confirmation is forged
	Seed          uint64
}

// NewPlan draws a plan: amounts, partners, commission rates, which
// deliveries are twinned, which charges get 1-3 refunds (summing to the
// whole amount or less), which get a late redelivery.
func NewPlan(runID string, o PlanOptions) Plan {
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	p := Plan{RunID: runID, Seed: o.Seed}
	at := time.Now().UTC().Truncate(time.Second)
	add := func(group string, i int) {
		id := fmt.Sprintf("st-%s-%s-%d", runID, group[:1], i)
		c := ChargePlan{ID: id, Amount: 1000 + rng.Int64N(99000), Partner: fmt.Sprintf("partner-%d", rng.IntN(7)),
			CommissionBP: []int64{0, 500, 1000, 1250, 2000}[rng.IntN(5)], Group: group}
		c.Paid = Delivery{ID: "pay-" + id, Kind: "paid", ChargeID: id, Amount: c.Amount,
			Body: standardBody("charge.paid", id, "", c.Amount, at)}
		if group == "forged" {
			c.Paid.Forged = true
			p.Charges = append(p.Charges, c)
			return
		}
		c.Twin = rng.IntN(2) == 0
		c.Late = rng.IntN(4) == 0
		if rng.IntN(2) == 0 {
			n := 1 + rng.IntN(3)
			// Either the whole amount (the last refund takes what is left)
			// or part of it.
			left := c.Amount
			if rng.IntN(2) == 0 {
				left = c.Amount/2 + rng.Int64N(c.Amount/2)
			}
			for k := 0; k < n && left > 0; k++ {
				amt := left
				if k < n-1 {
					amt = 1 + rng.Int64N(max(1, left/2))
				}
				left -= amt
				rid := fmt.Sprintf("rf-%s-%d", id, k)
				c.Refunds = append(c.Refunds, RefundPlan{Twin: rng.IntN(3) == 0, Delivery: Delivery{
					ID: "refund-" + rid, Kind: "refund", ChargeID: id, RefundID: rid, Amount: amt,
					Body: standardBody("charge.refunded", id, rid, amt, at.Add(time.Minute)),
				}})
			}
		}
		p.Charges = append(p.Charges, c)
	}
	for i := 0; i < o.Charges; i++ {
		add("storm", i)
	}
	for i := 0; i < o.OutageCharges*o.Outages; i++ {
		add("outage", i)
	}
	for i := 0; i < o.KillCharges*o.Kills; i++ {
		add("kill", i)
	}
	for i := 0; i < o.Forged; i++ {
		add("forged", i)
	}
	// A forged refund for a few real charges: authentic-looking, wrong key.
	for i := 0; i < o.Forged && i < o.Charges; i++ {
		c := p.Charges[i]
		rid := fmt.Sprintf("forged-rf-%s", c.ID)
		p.ForgedRefunds = append(p.ForgedRefunds, Delivery{ID: "refund-" + rid, Kind: "refund", ChargeID: c.ID,
			RefundID: rid, Amount: 1, Forged: true, Body: standardBody("charge.refunded", c.ID, rid, 1, at)})
	}
	return p
}

// ByGroup returns the charges of one group.
func (p Plan) ByGroup(group string) []ChargePlan {
	var out []ChargePlan
	for _, c := range p.Charges {
		if c.Group == group {
			out = append(out, c)
		}
	}
	return out
}
