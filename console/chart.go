package console

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"math"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"

	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// chartMonths is how many months the charts span at most, ending at ?to=.
const chartMonths = 12

// svgPolicy is the CSP of the chart images: an SVG of shapes and text
// with presentation attributes, no style sheet, font or script.
const svgPolicy = "default-src 'none'; frame-ancestors 'self'"

// chartFont is the font of the console's pages (console.css's body), so
// the charts read as part of the page; an image cannot inherit it.
const chartFont = `system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`

// The chart's size in CSS pixels (the pages' <img> says the same) and its
// text sizes.
const (
	chartWidth, chartHeight = 768, 384
	textSize, titleSize     = 12, 14
)

// months returns the chartMonths months ending at to, oldest first.
func months(to periods.Month) []periods.Month {
	out := make([]periods.Month, chartMonths)
	m := to
	for i := chartMonths - 1; i >= 0; i-- {
		out[i] = m
		m = m.Prev()
	}
	return out
}

// firstMonth is the books' first month: the first the periods list
// holds, which is the first from the ledger's go-live month on with
// posting sets or closed. It is zero when the books are empty.
func (c *Console) firstMonth(ctx context.Context) (periods.Month, error) {
	ps, err := periods.List(ctx, c.DB, c.Ledger.Calendar(), c.Now())
	if err != nil || len(ps) == 0 {
		return periods.Month{}, err
	}
	return periods.ParseMonth(ps[0].Month)
}

// since keeps the months of ms from first on: before the books' first
// month there is nothing to draw or list (and nothing is open). With no
// first month (empty books) nothing is kept.
func since(ms []periods.Month, first periods.Month) []periods.Month {
	if first.IsZero() {
		return nil
	}
	for i, m := range ms {
		if !m.Before(first) {
			return ms[i:]
		}
	}
	return nil
}

// trend is the income statements of the chart's months to the request's
// ?to=, from the books' first month on, read by reports.IncomeStatement as
// GET /v1/reports/income-statement/{month} reads each.
func (c *Console) trend(r *http.Request) (periods.Month, periods.Month, []periods.Month, []reports.Income, error) {
	to, err := monthParam(r, "to", c.currentMonth())
	if err != nil {
		return to, periods.Month{}, nil, nil, err
	}
	if err := to.Check(); err != nil {
		return to, periods.Month{}, nil, nil, err
	}
	first, err := c.firstMonth(r.Context())
	if err != nil {
		return to, first, nil, nil, err
	}
	ms := since(months(to), first)
	var out []reports.Income
	for _, m := range ms {
		inc, err := reports.IncomeStatement(r.Context(), c.reads(r.Context()), monthsums.Books{}, m)
		if err != nil {
			return to, first, nil, nil, err
		}
		out = append(out, inc)
	}
	return to, first, ms, out, nil
}

type chartPage struct {
	To, Prev, Next periods.Month
	// First is the books' first month; HasPrev is false when the chart
	// before this one would start before it.
	First   periods.Month
	HasPrev bool
	Months  []reports.Income
	Image   string
}

func (c *Console) chart(w http.ResponseWriter, r *http.Request) {
	to, first, _, incs, err := c.trend(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "chart", "Tendência até "+monthLabel(to), chartPage{
		To: to, Prev: to.Prev(), Next: to.Next(), First: first, HasPrev: !first.IsZero() && !to.Prev().Before(first),
		Months: incs, Image: Prefix + "/chart.svg?to=" + to.String(),
	})
}

// series is one line of a chart, in centavos per month.
type series struct {
	name   string
	values []int64
	color  string
	dashed bool
}

// The lines' colours: each has a contrast of 4.5:1 or more on white.
const (
	blue  = "#1f5fa8"
	red   = "#b3261e"
	ochre = "#8a5a00"
	green = "#1b7a3a"
)

func (c *Console) chartSVG(w http.ResponseWriter, r *http.Request) {
	_, _, ms, incs, err := c.trend(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	var sales, refunds, commission, net []int64
	for _, inc := range incs {
		sales = append(sales, inc.Sales)
		refunds = append(refunds, inc.Refunds)
		commission = append(commission, inc.Commission)
		net = append(net, inc.NetIncome)
	}
	writeSVG(w, "Vendas, estornos, comissões e resultado", ms, []series{
		{"Vendas", sales, blue, false},
		{"Estornos", refunds, red, true},
		{"Comissões", commission, ochre, true},
		{"Resultado", net, green, false},
	})
}

// writeSVG answers the chart of lines over ms.
func writeSVG(w http.ResponseWriter, title string, ms []periods.Month, lines []series) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Content-Security-Policy", svgPolicy)
	w.Write(drawChart(title, ms, lines))
}

// textFace measures text for the chart's layout. The pages' font is the
// system's (DejaVu Sans on Debian, Segoe UI on Windows), which the server
// cannot know: Liberation Sans (Arial's widths) is measured and widened
// by textSlack, which covers DejaVu Sans, the widest of them.
var textFace = font.NewCache(liberation.Collection()).Lookup(font.Font{Typeface: "Liberation", Variant: "Sans"}, textSize)

// textSlack is how much wider than Liberation Sans the text may render.
const textSlack = 1.18

// boldSlack is how much wider the title's bold is than regular text.
const boldSlack = 1.12

// textWidth is the width in pixels text takes at textSize, at most.
func textWidth(s string) float64 { return textFace.Width(s).Points() * textSlack }

// drawChart draws lines over the months ms as an SVG line chart: the
// title, the legend (entries side by side at their measured widths,
// wrapping to a new row rather than overlapping), the value axis in reais
// with 4 to 6 round ticks (niceTicks), and a month under each point.
func drawChart(title string, ms []periods.Month, lines []series) []byte {
	var b bytes.Buffer
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-labelledby="chart-title" font-family="%s" font-size="%d" fill="#1b1f24">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight, esc(chartFont), textSize)
	fmt.Fprintf(&b, `<title id="chart-title">%s</title>`+"\n", esc(title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", chartWidth, chartHeight)
	const pad = 12.0
	fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="%d" font-weight="600">%s</text>`+"\n", pad, pad+titleSize, titleSize,
		esc(fit(title, (chartWidth-2*pad)*textSize/titleSize/boldSlack)))

	// The legend, below the title: each entry a stroke sample and its
	// name, laid out at its measured width.
	const swatch, gap, rowHeight = 24.0, 18.0, 18.0
	x, y := pad, pad+titleSize+10+rowHeight/2
	for _, l := range lines {
		name := fit(l.name, chartWidth-2*pad-swatch-6)
		wEntry := swatch + 6 + textWidth(name)
		if x > pad && x+wEntry > chartWidth-pad {
			x, y = pad, y+rowHeight
		}
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2.5"%s/>`, x, y, x+swatch, y, l.color, dashes(l))
		fmt.Fprintf(&b, `<text x="%g" y="%g" dominant-baseline="central">%s</text>`+"\n", x+swatch+6, y, esc(name))
		x += wEntry + gap
	}
	top := y + rowHeight/2 + 18

	var lo, hi int64
	for _, l := range lines {
		for _, v := range l.values {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	ticks, step := niceTicks(lo, hi)
	labels := make([]string, len(ticks))
	left := 0.0
	for i, t := range ticks {
		labels[i] = reais(t, step)
		left = max(left, textWidth(labels[i]))
	}
	left += pad + 8
	right, bottom := chartWidth-pad-4, float64(chartHeight)-pad-2*textSize-8
	yOf := func(v int64) float64 {
		span := float64(ticks[len(ticks)-1] - ticks[0])
		return bottom - (float64(v-ticks[0])/span)*(bottom-top)
	}
	for i, t := range ticks {
		colour := "#d0d7de"
		if t == 0 {
			colour = "#57606a"
		}
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s" stroke-width="1"/>`, left, yOf(t), right, yOf(t), colour)
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="central">%s</text>`+"\n", left-8, yOf(t), esc(labels[i]))
	}

	if len(ms) == 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">Nenhum lançamento nestes meses.</text>`+"\n", (left+right)/2, (top+bottom)/2)
		b.WriteString("</svg>\n")
		return b.Bytes()
	}
	slot := (right - left) / float64(len(ms))
	xOf := func(i int) float64 { return left + slot*(float64(i)+0.5) }
	// A month's name above its year; when the slots are too narrow for
	// them, every k-th month is labelled.
	every := 1
	if need := textWidth("mmm") + 8; need > slot {
		every = int(math.Ceil(need / slot))
	}
	for i, m := range ms {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#57606a"/>`, xOf(i), bottom, xOf(i), bottom+4)
		if i%every == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle"><tspan x="%.1f">%s</tspan><tspan x="%.1f" dy="%d">%d</tspan></text>`+"\n",
				xOf(i), bottom+4+textSize, xOf(i), monthNames[m.Month-1], xOf(i), textSize+2, m.Year)
		}
	}
	for _, l := range lines {
		var pts []string
		for i, v := range l.values {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(v)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5" stroke-linejoin="round"%s/>`+"\n", strings.Join(pts, " "), l.color, dashes(l))
		for i, v := range l.values {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`, xOf(i), yOf(v), l.color)
		}
		b.WriteString("\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// fit shortens s with an ellipsis until it is at most width wide at
// textSize (the whole text stays in the image's title and the page).
func fit(s string, width float64) string {
	if textWidth(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && textWidth(string(r)+"…") > width {
		r = r[:len(r)-1]
	}
	return strings.TrimSpace(string(r)) + "…"
}

func dashes(l series) string {
	if l.dashed {
		return ` stroke-dasharray="7 4"`
	}
	return ""
}

// niceTicks returns the value axis's ticks, in centavos: 4 to 6 round
// values (1, 2, 2.5 or 5 times a power of ten) evenly spaced from at or
// below min(lo, 0) to at or above max(hi, 0), and their step.
func niceTicks(lo, hi int64) ([]int64, int64) {
	lo, hi = min(lo, 0), max(hi, 0)
	switch {
	case lo == hi:
		hi = 100_00 // an empty chart spans R$ 0 to R$ 100
	case hi-lo < 100: // under a real, ticks a centavo apart would not be 4
		if hi > 0 {
			hi = lo + 100
		} else {
			lo = hi - 100
		}
	}
	var step, first, last int64
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{10, 20, 25, 50} { // tenths: 2.5 is 25
			s := p * m / 10
			if s == 0 || p*m%10 != 0 {
				continue
			}
			f, l := floorDiv(lo, s), ceilDiv(hi, s)
			if l-f <= 5 {
				step, first, last = s, f, l
				break
			}
		}
		if step != 0 || p > math.MaxInt64/100 {
			break
		}
	}
	// Fewer than three intervals: halve the step while it stays round.
	for last-first < 3 && step%2 == 0 && step > 1 {
		step /= 2
		first, last = floorDiv(lo, step), ceilDiv(hi, step)
	}
	ticks := make([]int64, 0, last-first+1)
	for i := first; i <= last; i++ {
		ticks = append(ticks, i*step)
	}
	return ticks, step
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// reais writes a tick of the value axis: whole reais when the step is
// (R$ 1.500), with centavos when it is not (R$ 2,50).
func reais(centavos, step int64) string {
	if step%100 != 0 {
		return brl(centavos)
	}
	if centavos < 0 {
		return "−R$ " + count(-centavos/100)
	}
	return "R$ " + count(centavos/100)
}

// accountPage is an account's monthly series.
type accountPage struct {
	Series         reports.Series
	To, Prev, Next periods.Month
	HasPrev        bool
	// Credit is true for an account whose nature is credit: its chart
	// draws credit balances up.
	Credit bool
	Image  string
}

// accountSeries reads the chart's months to to of the account in the
// path, from the books' first month on, as GET /v1/accounts/{code}/series
// does. With no month left, the series has no points (the account is
// still read, so an unknown one is refused).
func (c *Console) accountSeries(r *http.Request) (reports.Series, periods.Month, periods.Month, error) {
	to, err := monthParam(r, "to", c.currentMonth())
	if err != nil {
		return reports.Series{}, to, periods.Month{}, err
	}
	if err := to.Check(); err != nil {
		return reports.Series{}, to, periods.Month{}, err
	}
	first, err := c.firstMonth(r.Context())
	if err != nil {
		return reports.Series{}, to, first, err
	}
	ms := since(months(to), first)
	from := to
	if len(ms) > 0 {
		from = ms[0]
	}
	s, err := reports.AccountSeries(r.Context(), c.reads(r.Context()), monthsums.Books{}, mux.Vars(r)["code"], from, to)
	if len(ms) == 0 {
		s.Points = nil
	}
	return s, to, first, err
}

func (c *Console) account(w http.ResponseWriter, r *http.Request) {
	s, to, first, err := c.accountSeries(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "account", "Conta "+accountName(s.Account), accountPage{
		Series: s, To: to, Prev: to.Prev(), Next: to.Next(), HasPrev: !first.IsZero() && !to.Prev().Before(first),
		Credit: s.NormalSide == "credit",
		Image:  Prefix + "/accounts/" + s.Account + "/chart.svg?to=" + to.String(),
	})
}

// accountSVG charts an account's movement and balance the way its nature
// reads them: a credit account (revenue, a payable) upward when credit.
func (c *Console) accountSVG(w http.ResponseWriter, r *http.Request) {
	s, _, _, err := c.accountSeries(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	sign, nature, flow := int64(1), "devedor", "débitos − créditos"
	if s.NormalSide == "credit" {
		sign, nature, flow = -1, "credor", "créditos − débitos"
	}
	var change, historical []int64
	var ms []periods.Month
	for _, p := range s.Points {
		m, err := periods.ParseMonth(p.Month)
		if err != nil {
			c.failWith(w, r, fmt.Errorf("series %s: month %q: %w", s.Account, p.Month, err))
			return
		}
		ms = append(ms, m)
		change = append(change, sign*p.Change)
		historical = append(historical, sign*p.Historical)
	}
	writeSVG(w, accountName(s.Account)+" ("+s.Account+")", ms, []series{
		{"Saldo " + nature + " ao fim do mês", historical, green, false},
		{"Movimento do mês (" + flow + ")", change, blue, true},
	})
}
