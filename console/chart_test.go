package console

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/razao/razao/internal/browsertest"
	"github.com/razao/razao/periods"
)

// The value axis has 4 to 6 round ticks covering every value and zero,
// whatever the values: not just 0 and 250.
func TestNiceTicksAreFourToSixRoundValuesCoveringTheData(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	cases := [][2]int64{{0, 0}, {0, 25000}, {0, 29440}, {-7296, 17490}, {-1, 1}, {0, 1}, {-500, 0}, {0, 123456789}, {-99999999, 5}, {0, 1 << 60}}
	for range 2000 {
		a, b := r.Int64N(1<<40)-1<<39, r.Int64N(1<<40)-1<<39
		cases = append(cases, [2]int64{min(a, b), max(a, b)})
	}
	round := map[int64]bool{10: true, 20: true, 25: true, 50: true}
	for _, c := range cases {
		ticks, step := niceTicks(c[0], c[1])
		if len(ticks) < 4 || len(ticks) > 6 {
			t.Errorf("%v: %d ticks %v, want 4 to 6", c, len(ticks), ticks)
			continue
		}
		if ticks[0] > min(c[0], 0) || ticks[len(ticks)-1] < max(c[1], 0) {
			t.Errorf("%v: ticks %v do not cover the values and zero", c, ticks)
		}
		m := step
		for m >= 100 && m%10 == 0 {
			m /= 10
		}
		if !round[m] && !round[m*10] {
			t.Errorf("%v: step %d is not 1, 2, 2.5 or 5 times a power of ten", c, step)
		}
	}
	for _, c := range []struct {
		v, step int64
		want    string
	}{{0, 5000, "R$ 0"}, {25000, 5000, "R$ 250"}, {-150000000, 50000000, "−R$ 1.500.000"}, {250, 50, "R$ 2,50"}, {-50, 50, "−R$ 0,50"}} {
		if got := reais(c.v, c.step); got != c.want {
			t.Errorf("reais(%d, %d) = %q, want %q", c.v, c.step, got, c.want)
		}
	}
}

// noOverlap lists the pairs of the SVG's texts whose boxes, as the
// browser draws them, overlap, and the texts not in the page's sans-serif
// font; with the number of value-axis ticks.
const noOverlap = `(() => {
  const texts = [...document.querySelectorAll("text")].filter(t => t.textContent.trim() !== "");
  const boxes = texts.map(t => t.getBoundingClientRect());
  const out = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) {
        out.push(JSON.stringify(texts[i].textContent) + " over " + JSON.stringify(texts[j].textContent));
      }
    }
    const svg = document.documentElement.getBoundingClientRect();
    if (boxes[i].left < svg.left || boxes[i].right > svg.right) out.push(JSON.stringify(texts[i].textContent) + " cut at the edge");
  }
  const family = getComputedStyle(texts[0]).fontFamily;
  if (!family.startsWith("system-ui")) out.push("font " + family);
  return out;
})()`

// The charts' texts never overlap in a browser, in the page's font: a
// year of large values with long names, the example books' two months,
// and an account's series.
func TestChartTextsNeverOverlapInTheBrowser(t *testing.T) {
	t.Parallel()
	var ms []periods.Month
	for m := (periods.Month{Year: 2025, Month: time.October}); len(ms) < 12; m = m.Next() {
		ms = append(ms, m)
	}
	r := rand.New(rand.NewPCG(3, 4))
	year := func(scale int64) []int64 {
		v := make([]int64, 12)
		for i := range v {
			v[i] = r.Int64N(2*scale) - scale/3
		}
		return v
	}
	charts := map[string][]byte{
		"/year.svg": drawChart("Vendas, estornos, comissões e resultado", ms, []series{
			{"Vendas", year(1_234_567_89), blue, false}, {"Estornos", year(98_765_43), red, true},
			{"Comissões", year(12_345_67), ochre, true}, {"Resultado", year(1_000_000_00), green, false},
		}),
		"/long.svg": drawChart("Comissões a pagar — parceiro-com-um-nome-bem-comprido (liabilities:commission-payable:parceiro-com-um-nome-bem-comprido)", ms, []series{
			{"Saldo credor ao fim do mês", year(9_999_999_999_99), green, false},
			{"Movimento do mês (créditos − débitos)", year(99_999_99), blue, true},
			{"Uma terceira linha de nome longo para forçar a quebra da legenda", year(5_00), red, true},
		}),
		"/small.svg": drawChart("Receita de vendas (income:revenue)", ms[10:], []series{{"Saldo credor ao fim do mês", []int64{174_90, 94_90}, green, false}}),
		"/empty.svg": drawChart("Sem nada", nil, nil),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(charts[r.URL.Path])
	}))
	defer srv.Close()
	b := browsertest.New(t, srv.URL, "testoutput")
	ticks := regexp.MustCompile(`text-anchor="end"[^>]*>([^<]*)<`)
	for path, svg := range charts {
		b.Do(path, chromedp.Navigate(srv.URL+path), chromedp.WaitReady(chromedp.CSS("text")))
		if found, _ := b.Eval(noOverlap).([]any); len(found) > 0 {
			t.Errorf("%s: %v", path, found)
		}
		if n := len(ticks.FindAllStringSubmatch(string(svg), -1)); n < 4 || n > 6 {
			t.Errorf("%s: %d value-axis ticks, want 4 to 6", path, n)
		}
		b.Screenshot("chart" + strings.ReplaceAll(strings.TrimSuffix(path, ".svg"), "/", "-"))
	}
	// The page's font is the charts'.
	css, err := os.ReadFile("static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(css), "font: 16px/1.45 "+chartFont+";") {
		t.Errorf("console.css's body font is not the charts' (%s)", chartFont)
	}
}
