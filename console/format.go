package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
)

// brl formats centavos as Brazilians write money (money.FormatBRL).
var brl = money.FormatBRL

// dc writes a signed balance (debit positive, as the reports give it) as
// Brazilian balancetes do: its size with D for a debit (devedor) balance
// or C for a credit (credor) one, R$ 294,40 C for an income account's
// credit balance rather than −R$ 294,40; a zero balance has no side.
func dc(centavos int64) string {
	switch {
	case centavos > 0:
		return brl(centavos) + " D"
	case centavos < 0:
		return strings.TrimPrefix(brl(centavos), "−") + " C"
	}
	return brl(0)
}

// count formats a whole number with Brazilian thousands dots.
func count(n int64) string {
	if n < 0 {
		return "−" + money.GroupThousands(strconv.FormatUint(uint64(-n), 10))
	}
	return money.GroupThousands(strconv.FormatInt(n, 10))
}

// monthNames are the abbreviations Brazilian finance writes months with.
var monthNames = [...]string{"jan", "fev", "mar", "abr", "mai", "jun", "jul", "ago", "set", "out", "nov", "dez"}

// monthOption is one month of the month picker: its number as the form
// sends it (08) and its Portuguese name.
type monthOption struct {
	Number       time.Month
	Value, Label string
}

// monthOptions are the picker's twelve months.
func monthOptions() []monthOption {
	out := make([]monthOption, 12)
	for i, n := range monthNames {
		out[i] = monthOption{Number: time.Month(i + 1), Value: fmt.Sprintf("%02d", i+1), Label: n}
	}
	return out
}

// monthLabel writes a month as ago/2026.
func monthLabel(m periods.Month) string {
	return monthNames[m.Month-1] + "/" + strconv.Itoa(m.Year)
}

// monthText is monthLabel of a "YYYY-MM" string, or the string itself
// when it is not one (never expected: the reports produce them).
func monthText(s string) string {
	m, err := periods.ParseMonth(s)
	if err != nil {
		return s
	}
	return monthLabel(m)
}

// dateTime writes t as 02/01/2006 15:04 in loc.
func dateTime(loc *time.Location) func(time.Time) string {
	return func(t time.Time) string { return t.In(loc).Format("02/01/2006 15:04") }
}

// zoneName names the ledger's time zone for the pages' footer: the city
// of an IANA zone (America/Sao_Paulo is São Paulo), its accents restored
// for the zones Brazil uses.
func zoneName(loc *time.Location) func() string {
	name := loc.String()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ReplaceAll(name, "_", " ")
	if n, ok := brazilianCities[name]; ok {
		name = n
	}
	return func() string { return name }
}

// brazilianCities are the IANA zones of Brazil whose city names lose an
// accent in the zone's name.
var brazilianCities = map[string]string{
	"Sao Paulo": "São Paulo", "Belem": "Belém", "Maceio": "Maceió", "Cuiaba": "Cuiabá",
	"Araguaina": "Araguaína", "Eirunepe": "Eirunepé", "Santarem": "Santarém",
}
