package console

import (
	"bytes"
	"fmt"
	"image/color"
	"net/http"

	"github.com/gorilla/mux"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/razao/razao/monthsums"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/reports"
)

// chartMonths is how many months the charts span, ending at ?to=.
const chartMonths = 12

// svgPolicy is the CSP of the chart images: the SVG gonum writes carries
// its fonts and styles inline, and no script at all.
const svgPolicy = "default-src 'none'; style-src 'unsafe-inline'; font-src data:; frame-ancestors 'self'"

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

// trend is the year of income statements to the request's ?to=, read by
// reports.IncomeStatement as GET /v1/reports/income-statement/{month}
// reads each.
func (c *Console) trend(r *http.Request) (periods.Month, []reports.Income, error) {
	to, err := monthParam(r, "to", c.currentMonth())
	if err != nil {
		return to, nil, err
	}
	var out []reports.Income
	for _, m := range months(to) {
		inc, err := reports.IncomeStatement(r.Context(), c.DB, monthsums.Books{}, m)
		if err != nil {
			return to, nil, err
		}
		out = append(out, inc)
	}
	return to, out, nil
}

type chartPage struct {
	To, Prev, Next periods.Month
	Months         []reports.Income
	Image          string
}

func (c *Console) chart(w http.ResponseWriter, r *http.Request) {
	to, incs, err := c.trend(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "chart", "Tendência até "+monthLabel(to), chartPage{
		To: to, Prev: to.Prev(), Next: to.Next(), Months: incs, Image: Prefix + "/chart.svg?to=" + to.String(),
	})
}

// series is one line of a chart, in centavos per month.
type series struct {
	name   string
	values []int64
	color  color.RGBA
	dashed bool
}

func (c *Console) chartSVG(w http.ResponseWriter, r *http.Request) {
	to, incs, err := c.trend(r)
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
	c.writeSVG(w, r, "Vendas, estornos, comissões e resultado", months(to), []series{
		{"Vendas", sales, color.RGBA{R: 0x1f, G: 0x5f, B: 0xa8, A: 0xff}, false},
		{"Estornos", refunds, color.RGBA{R: 0xb3, G: 0x26, B: 0x1e, A: 0xff}, true},
		{"Comissões", commission, color.RGBA{R: 0x8a, G: 0x5a, B: 0x00, A: 0xff}, true},
		{"Resultado", net, color.RGBA{R: 0x1b, G: 0x7a, B: 0x3a, A: 0xff}, false},
	})
}

// writeSVG renders lines over ms as an SVG chart with gonum/plot.
func (c *Console) writeSVG(w http.ResponseWriter, r *http.Request, title string, ms []periods.Month, lines []series) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "R$"
	p.Y.Tick.Marker = reaisTicks{}
	var ticks []plot.Tick
	for i, m := range ms {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: monthLabel(m)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	// Half a month of room each side, so the first and last labels show whole.
	p.X.Min, p.X.Max = -0.5, float64(len(ms))-0.5
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for _, s := range lines {
		xys := make(plotter.XYs, len(s.values))
		for i, v := range s.values {
			xys[i] = plotter.XY{X: float64(i), Y: float64(v) / 100}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			c.failWith(w, r, fmt.Errorf("chart line %s: %w", s.name, err))
			return
		}
		l.Color, pts.Color = s.color, s.color
		l.Width = vg.Points(2)
		pts.Shape = draw.CircleGlyph{}
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l)
	}
	out, err := p.WriterTo(8*vg.Inch, 4*vg.Inch, "svg")
	if err != nil {
		c.failWith(w, r, fmt.Errorf("chart: %w", err))
		return
	}
	var b bytes.Buffer
	if _, err := out.WriteTo(&b); err != nil {
		c.failWith(w, r, fmt.Errorf("chart: %w", err))
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Content-Security-Policy", svgPolicy)
	w.Write(b.Bytes())
}

// reaisTicks labels the value axis in whole reais, Brazilian style.
type reaisTicks struct{}

func (reaisTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = count(int64(ts[i].Value))
		}
	}
	return ts
}

// accountPage is an account's monthly series.
type accountPage struct {
	Series         reports.Series
	To, Prev, Next periods.Month
	Image          string
}

// accountSeries reads the chartMonths months to to of the account in the
// path, as GET /v1/accounts/{code}/series does.
func (c *Console) accountSeries(r *http.Request) (reports.Series, periods.Month, error) {
	to, err := monthParam(r, "to", c.currentMonth())
	if err != nil {
		return reports.Series{}, to, err
	}
	ms := months(to)
	s, err := reports.AccountSeries(r.Context(), c.DB, monthsums.Books{}, mux.Vars(r)["code"], ms[0], to)
	return s, to, err
}

func (c *Console) account(w http.ResponseWriter, r *http.Request) {
	s, to, err := c.accountSeries(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	c.render(w, r, "account", "Conta "+s.Account, accountPage{
		Series: s, To: to, Prev: to.Prev(), Next: to.Next(),
		Image: Prefix + "/accounts/" + s.Account + "/chart.svg?to=" + to.String(),
	})
}

func (c *Console) accountSVG(w http.ResponseWriter, r *http.Request) {
	s, to, err := c.accountSeries(r)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	var change, historical []int64
	for _, p := range s.Points {
		change = append(change, p.Change)
		historical = append(historical, p.Historical)
	}
	c.writeSVG(w, r, s.Account, months(to), []series{
		{"Movimento do mês (D−C)", change, color.RGBA{R: 0x1f, G: 0x5f, B: 0xa8, A: 0xff}, false},
		{"Saldo (D−C)", historical, color.RGBA{R: 0x1b, G: 0x7a, B: 0x3a, A: 0xff}, true},
	})
}
