package exact

import (
	"errors"
	"math"
	"math/big"
	"testing"
)

// FuzzWideSum: the 128-bit sum of any int64s is exact, and Fit refuses it
// exactly when it does not fit int64, however far the partial sums stray.
func FuzzWideSum(f *testing.F) {
	f.Add(int64(math.MaxInt64), int64(1), int64(-2))
	f.Add(int64(math.MinInt64), int64(-1), int64(1))
	f.Add(int64(5e18), int64(5e18), int64(-5e18))
	f.Fuzz(func(t *testing.T, a, b, c int64) {
		var w Wide
		w.Add(a)
		w.Add(b)
		var v Wide
		v.Add(c)
		w.SubWide(v) // a + b − c
		w.AddWide(v)
		w.SubWide(v)
		want := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
		want.Sub(want, big.NewInt(c))
		var s Sums
		got := s.Fit(w, "figure", "of")
		if want.IsInt64() != (s.Err() == nil) {
			t.Fatalf("%d + %d - %d: fit err %v, want fits=%v", a, b, c, s.Err(), want.IsInt64())
		}
		if s.Err() == nil && got != want.Int64() {
			t.Fatalf("%d + %d - %d = %d, want %s", a, b, c, got, want)
		}
		if s.Err() != nil && !errors.Is(s.Err(), ErrSumOverflow) {
			t.Fatalf("err %v is not ErrSumOverflow", s.Err())
		}
	})
}
