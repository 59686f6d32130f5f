package console

import (
	"regexp"
	"testing"

	"github.com/razao/razao/reports"
)

// wantBalanceteLine fails the test unless the balancete's row of l's
// account shows the API's figures as a balancete writes them: the
// balances with their side (dc), the month's debits and credits as
// amounts.
func wantBalanceteLine(t *testing.T, page, month string, l reports.TrialBalanceLine) {
	t.Helper()
	for name, want := range map[string]string{"opening": dc(l.Opening), "debits": brl(l.Debits), "credits": brl(l.Credits), "closing": dc(l.Closing)} {
		if got := field(t, page, "data-account", l.Account, name); got != want {
			t.Errorf("%s %s %s: page %q, API %s", month, l.Account, name, got, want)
		}
	}
}

var axisMonthRE = regexp.MustCompile(`<tspan x="[^"]*">([a-z]{3})</tspan><tspan x="[^"]*" dy="\d+">(\d{4})</tspan>`)

// axisMonths are the months a chart's SVG labels under its axis, as
// ago/2026.
func axisMonths(svg string) []string {
	var out []string
	for _, m := range axisMonthRE.FindAllStringSubmatch(svg, -1) {
		out = append(out, m[1]+"/"+m[2])
	}
	return out
}
