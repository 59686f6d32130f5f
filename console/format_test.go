package console

import (
	"math"
	"testing"

	"github.com/razao/razao/periods"
)

func TestBRL(t *testing.T) {
	for in, want := range map[int64]string{
		0:             "R$ 0,00",
		5:             "R$ 0,05",
		123456:        "R$ 1.234,56",
		-123456:       "−R$ 1.234,56",
		100000000:     "R$ 1.000.000,00",
		99999:         "R$ 999,99",
		math.MaxInt64: "R$ 92.233.720.368.547.758,07",
		math.MinInt64: "−R$ 92.233.720.368.547.758,08",
	} {
		if got := brl(in); got != want {
			t.Errorf("brl(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestMonthLabel(t *testing.T) {
	for in, want := range map[string]string{"2026-08": "ago/2026", "2026-01": "jan/2026", "2025-12": "dez/2025", "nope": "nope"} {
		if got := monthText(in); got != want {
			t.Errorf("monthText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := count(1234567); got != "1.234.567" {
		t.Errorf("count = %q", got)
	}
	_ = periods.Month{}
}

// A balance is written with its side, as a balancete writes it: an income
// account's credit balance is "R$ 294,40 C", never −R$ 294,40.
func TestDCWritesTheBalancesSide(t *testing.T) {
	for in, want := range map[int64]string{
		0:             "R$ 0,00",
		29440:         "R$ 294,40 D",
		-29440:        "R$ 294,40 C",
		-5:            "R$ 0,05 C",
		-123456789:    "R$ 1.234.567,89 C",
		math.MinInt64: "R$ 92.233.720.368.547.758,08 C",
	} {
		if got := dc(in); got != want {
			t.Errorf("dc(%d) = %q, want %q", in, got, want)
		}
	}
}
