package money

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func TestParseReaisAcceptsExactDecimals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
	}{
		{"49.90", 4990},
		{"49.9", 4990},
		{"0.01", 1},
		{"0.1", 10},
		{"1234", 123400},
		{"1", 100},
		{"049.90", 4990},
		{"0000.50", 50},
		{"92233720368547758.07", math.MaxInt64},
		{"92233720368547758", 9223372036854775800},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseReais(tt.in)
			if err != nil {
				t.Fatalf("ParseReais(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseReais(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseReaisRefusesAmbiguousInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want error
	}{
		{"", ErrSyntax},
		{" 49.90", ErrSyntax},
		{"49.90 ", ErrSyntax},
		{"49 .90", ErrSyntax},
		{"\t1", ErrSyntax},
		{"+49.90", ErrSyntax},
		{"-49.90", ErrSyntax},
		{"-0.01", ErrSyntax},
		{"1e2", ErrSyntax},
		{"1E2", ErrSyntax},
		{"1.5e1", ErrSyntax},
		{"1.234", ErrTooManyDecimals},
		{"1.230", ErrTooManyDecimals},
		{"0.001", ErrTooManyDecimals},
		{"0", ErrNotPositive},
		{"0.00", ErrNotPositive},
		{"00.0", ErrNotPositive},
		{"92233720368547758.08", ErrOverflow},
		{"99999999999999999999", ErrOverflow},
		{"NaN", ErrSyntax},
		{"nan", ErrSyntax},
		{"Inf", ErrSyntax},
		{"+Inf", ErrSyntax},
		{"Infinity", ErrSyntax},
		{"0x10", ErrSyntax},
		{"0X1p4", ErrSyntax},
		{"1_000", ErrSyntax},
		{".5", ErrSyntax},
		{"5.", ErrSyntax},
		{".", ErrSyntax},
		{"1..2", ErrSyntax},
		{"1.2.3", ErrSyntax},
		{"49,90", ErrSyntax},
		{"1,000.00", ErrSyntax},
		{"R$1", ErrSyntax},
		{"١٢", ErrSyntax}, // Arabic-Indic digits are digits to unicode, not to us
		{"１", ErrSyntax},  // fullwidth digit
		{"\"49.90\"", ErrSyntax},
		{strings.Repeat("0", 70) + "1", ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseReais(tt.in)
			if err == nil {
				t.Fatalf("ParseReais(%q) = %d, want an error", tt.in, got)
			}
			if !errors.Is(err, ErrInvalidAmount) {
				t.Errorf("ParseReais(%q) error %v does not wrap ErrInvalidAmount", tt.in, err)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("ParseReais(%q) error %v does not wrap %v", tt.in, err, tt.want)
			}
		})
	}
}

func TestFormatReaisRendersEveryInt64(t *testing.T) {
	t.Parallel()
	tests := []struct {
		centavos int64
		sep      rune
		want     string
	}{
		{4990, '.', "49.90"},
		{4990, ',', "49,90"},
		{0, '.', "0.00"},
		{1, '.', "0.01"},
		{10, '.', "0.10"},
		{100, '.', "1.00"},
		{-5, '.', "-0.05"},
		{-4990, ',', "-49,90"},
		{123400, '.', "1234.00"},
		{math.MaxInt64, '.', "92233720368547758.07"},
		{math.MinInt64, '.', "-92233720368547758.08"},
		{math.MinInt64 + 1, ',', "-92233720368547758,07"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			if got := FormatReais(tt.centavos, tt.sep); got != tt.want {
				t.Fatalf("FormatReais(%d, %q) = %q, want %q", tt.centavos, tt.sep, got, tt.want)
			}
		})
	}
}

func TestErrorQuotesAndTruncatesHostileInput(t *testing.T) {
	t.Parallel()
	_, err := ParseReais("1\n" + strings.Repeat("x", 1000))
	if err == nil {
		t.Fatal("want an error")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 200 {
		t.Fatalf("error message not sanitised: %q", msg)
	}
}

// FuzzParseReais checks that ParseReais never panics, that whatever it
// accepts is a positive amount equal to the exact decimal value of the input,
// and that FormatReais renders it back to an input it accepts again.
func FuzzParseReais(f *testing.F) {
	for _, s := range []string{
		"49.90", "49.9", "0.01", "1234", "0", "-1", "1e2", "1.234", " 1",
		".5", "5.", "NaN", "0x10", "1_0", "92233720368547758.07",
		"92233720368547758.08", "0049.90",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseReais(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidAmount) {
				t.Fatalf("ParseReais(%q) error %v does not wrap ErrInvalidAmount", s, err)
			}
			return
		}
		if got <= 0 {
			t.Fatalf("ParseReais(%q) = %d, accepted a non-positive amount", s, got)
		}
		if !decimal.RequireFromString(s).Equal(decimal.New(got, -2)) {
			t.Fatalf("ParseReais(%q) = %d centavos, not the input's value", s, got)
		}
		formatted := FormatReais(got, '.')
		back, err := ParseReais(formatted)
		if err != nil || back != got {
			t.Fatalf("round trip %q -> %d -> %q -> %d, %v", s, got, formatted, back, err)
		}
	})
}

// FuzzFormatReais checks that every positive int64 survives
// FormatReais then ParseReais, and that no int64 makes FormatReais panic.
func FuzzFormatReais(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 99, 100, 4990, math.MaxInt64, math.MinInt64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		s := FormatReais(v, ',')
		if strings.Count(s, ",") != 1 {
			t.Fatalf("FormatReais(%d, ',') = %q", v, s)
		}
		if v <= 0 {
			return
		}
		back, err := ParseReais(FormatReais(v, '.'))
		if err != nil || back != v {
			t.Fatalf("round trip of %d gave %d, %v", v, back, err)
		}
	})
}
