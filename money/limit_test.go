package money

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestLimitCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		limit  Limit
		amount int64
		ok     bool
	}{
		{0, DefaultMaxAmount, true}, // the zero Limit is the default
		{0, DefaultMaxAmount + 1, false},
		{0, -DefaultMaxAmount, true}, // a credit leg: its magnitude counts
		{0, -DefaultMaxAmount - 1, false},
		{0, math.MaxInt64, false},
		{0, math.MinInt64, false},
		{100, 100, true},
		{100, 101, false},
		{Limit(Ceiling), Ceiling, true},
	} {
		err := tt.limit.Check("amount", tt.amount)
		if (err == nil) != tt.ok {
			t.Errorf("Limit(%d).Check(%d) = %v", tt.limit, tt.amount, err)
		}
		var above *AboveMaxError
		if err != nil && (!errors.Is(err, ErrAboveMax) || !errors.As(err, &above) || above.Max != tt.limit.Max() ||
			!strings.Contains(err.Error(), "amount") || !strings.Contains(err.Error(), FormatReais(tt.limit.Max(), '.'))) {
			t.Errorf("Limit(%d).Check(%d): %v does not name the field and the limit", tt.limit, tt.amount, err)
		}
	}
	for _, l := range []Limit{-1, 0, Limit(Ceiling) + 1} {
		if l.Validate() == nil {
			t.Errorf("Limit(%d).Validate() accepted it", l)
		}
	}
	if Limit(Ceiling).Validate() != nil || Limit(1).Validate() != nil {
		t.Error("a limit within 1..Ceiling refused")
	}
}

func TestAddSubChecked(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b         int64
		addOK, subOK bool
	}{
		{0, 0, true, true},
		{math.MaxInt64, 1, false, true},
		{math.MaxInt64, -1, true, false},
		{math.MinInt64, -1, false, true},
		{math.MinInt64, 1, true, false},
		{0, math.MinInt64, true, false},
		{-1, math.MinInt64, false, true},
		{5, -3, true, true},
	} {
		if s, ok := Add(tt.a, tt.b); ok != tt.addOK || ok && s != tt.a+tt.b {
			t.Errorf("Add(%d, %d) = %d, %v", tt.a, tt.b, s, ok)
		}
		if d, ok := Sub(tt.a, tt.b); ok != tt.subOK || ok && d != tt.a-tt.b {
			t.Errorf("Sub(%d, %d) = %d, %v", tt.a, tt.b, d, ok)
		}
	}
}
