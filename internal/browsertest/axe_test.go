package browsertest

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A page with an unlabelled field, an image without alt text and grey on
// grey text: axe-core, injected past a CSP that allows no script at all,
// names each as a blocking violation; a clean page has none.
func TestAxeFindsViolationsPastTheCSP(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"/bad": `<!doctype html><html lang="pt-BR"><head><title>ruim</title></head><body><main>
<h1>Ruim</h1><form><input name="x"></form><img src="data:,">
<p class="grey">texto ilegível</p><link rel="stylesheet" href="/grey.css"></main></body></html>`,
		"/good": `<!doctype html><html lang="pt-BR"><head><title>bom</title></head><body><main>
<h1>Bom</h1><form><label for="x">Nome</label><input id="x" name="x"></form></main></body></html>`,
		"/grey.css": `.grey { color: #bbb; background: #ccc; }`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src data:")
		if strings.HasSuffix(r.URL.Path, ".css") {
			w.Header().Set("Content-Type", "text/css")
		}
		w.Write([]byte(pages[r.URL.Path]))
	}))
	defer srv.Close()
	b := New(t, srv.URL, "testoutput")

	b.Do("bad page", chromedp.Navigate(srv.URL+"/bad"), chromedp.WaitVisible(chromedp.CSS("h1")))
	vs, err := b.AxeViolations()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range vs {
		if v.Blocking() {
			ids = append(ids, v.ID)
		}
	}
	for _, want := range []string{"label", "image-alt", "color-contrast"} {
		if !slices.Contains(ids, want) {
			t.Errorf("axe-core did not report %s as serious or critical: %v", want, vs)
		}
	}

	b.Do("good page", chromedp.Navigate(srv.URL+"/good"), chromedp.WaitVisible(chromedp.CSS("h1")))
	if vs, err := b.AxeViolations(); err != nil || len(vs) != 0 {
		t.Errorf("a clean page: %v, %v", vs, err)
	}
}

// Without axe-core installed, the check fails and says how to install it.
func TestAxeWithoutAxeCoreSaysToRunNpmCi(t *testing.T) {
	t.Setenv("RAZAO_AXE", filepath.Join(t.TempDir(), "axe.min.js"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<!doctype html><title>x</title><h1>x</h1>`))
	}))
	defer srv.Close()
	b := New(t, srv.URL, "testoutput")
	b.Do("page", chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS("h1")))
	if _, err := b.AxeViolations(); err == nil || !strings.Contains(err.Error(), "npm ci") {
		t.Errorf("without axe-core: %v, want an error saying to run npm ci", err)
	}
}
