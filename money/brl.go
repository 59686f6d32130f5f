package money

import (
	"strconv"
	"strings"
)

// FormatBRL writes centavos as Brazilians write money: R$ 1.234,56, a
// minus sign (U+2212) before the symbol for a negative amount. Every
// int64 is written, the most negative included (its magnitude does not
// fit an int64, so the digits are taken from the unsigned value). The
// console's pages and the divergences' Portuguese details both use it.
func FormatBRL(centavos int64) string {
	neg := centavos < 0
	u := uint64(centavos)
	if neg {
		u = -u
	}
	var b strings.Builder
	if neg {
		b.WriteString("−")
	}
	b.WriteString("R$ ")
	b.WriteString(GroupThousands(strconv.FormatUint(u/100, 10)))
	b.WriteByte(',')
	cents := u % 100
	b.WriteByte(byte('0' + cents/10))
	b.WriteByte(byte('0' + cents%10))
	return b.String()
}

// GroupThousands puts a dot between each group of three digits of a run
// of decimal digits, as Brazilians write numbers: 1.234.567.
func GroupThousands(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	head := len(digits) % 3
	if head > 0 {
		b.WriteString(digits[:head])
	}
	for i := head; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}
