package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/razao/razao/divergences"
	"github.com/razao/razao/reconcile"
)

// The reconciliation pages: the runs, newest first; a run and its lines,
// filterable by outcome, kind and side; and the upload of a CSV statement,
// reconciled as POST /v1/reconciliations reconciles it. They read through
// the functions GET /v1/reconciliations calls.

// Reconciliations is the service's reconciler as the pages use it
// (*reconcile.Reconciler; razao serve gives one that takes no file when
// no endpoint is reconciled, so the history stays readable).
type Reconciliations interface {
	// Endpoints lists the reconciled endpoints, in config order.
	Endpoints() []string
	// MaxFileBytes bounds a statement file of endpoint; 0: it takes none.
	MaxFileBytes(endpoint string) int64
	// ReconcileFile reconciles a CSV statement of endpoint over [from,
	// to) (both zero: the span of its lines) and returns the finished run.
	ReconcileFile(ctx context.Context, endpoint string, file io.Reader, from, to time.Time) (reconcile.Run, error)
}

// runsPerPage is how many runs a page of them shows.
const runsPerPage = 50

// uploadEndpoint is an endpoint that takes a statement file.
type uploadEndpoint struct {
	Name     string
	MaxBytes int64
}

type reconciliationsPage struct {
	Runs      []reconcile.Run
	Next      string
	Endpoint  string
	Endpoints []uploadEndpoint
	// MaxBytes is the largest file any endpoint takes (the script checks
	// the file's size before sending it).
	MaxBytes int64
}

// runLine is a line of a run with the status of the divergence it
// points at, if any: a line that points at a resolved one is no news.
type runLine struct {
	reconcile.LineResult
	DivergenceStatus divergences.Status
}

type runPage struct {
	Run    reconcile.Run
	Lines  []runLine
	Filter reconcile.LineFilter
	Next   string
	// Uploaded says the page follows its upload. The file's name is not
	// repeated: the run does not store it, and a name taken from the URL
	// would let any link label a real run with a made-up file.
	Uploaded bool
	Outcomes []string
	Kinds    []string
}

var (
	lineOutcomes = []string{string(reconcile.Matched), string(reconcile.Booked), string(reconcile.Divergence)}
	lineKinds    = []string{string(reconcile.KindPaid), string(reconcile.KindRefunded), string(reconcile.KindRefundOpen), string(reconcile.KindInvalid)}
	lineSides    = []string{"statement", "ledger"}
)

// fileEndpoints are the endpoints that take a statement file.
func (c *Console) fileEndpoints() []uploadEndpoint {
	var out []uploadEndpoint
	for _, e := range c.Reconciliations.Endpoints() {
		if n := c.Reconciliations.MaxFileBytes(e); n > 0 {
			out = append(out, uploadEndpoint{Name: e, MaxBytes: n})
		}
	}
	return out
}

// reconciliationRuns lists the runs newest first, of one endpoint when
// ?endpoint= names it, paged by ?before=. The old ?run=ID is the run's
// page now.
func (c *Console) reconciliationRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if v := q.Get("run"); v != "" {
		http.Redirect(w, r, Prefix+"/reconciliation/"+url.PathEscape(v), http.StatusMovedPermanently)
		return
	}
	var before int64
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			c.fail(w, r, http.StatusBadRequest, "Paginação inválida: volte à primeira página.")
			return
		}
		before = n
	}
	pg := reconciliationsPage{Endpoint: q.Get("endpoint"), Endpoints: c.fileEndpoints()}
	if len(pg.Endpoint) > 200 {
		c.fail(w, r, http.StatusBadRequest, "Endpoint inválido.")
		return
	}
	for _, e := range pg.Endpoints {
		pg.MaxBytes = max(pg.MaxBytes, e.MaxBytes)
	}
	runs, next, err := reconcile.RunsPage(r.Context(), c.reads(r.Context()), pg.Endpoint, before, runsPerPage)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	pg.Runs = runs
	if next > 0 {
		v := url.Values{"before": {strconv.FormatInt(next, 10)}}
		if pg.Endpoint != "" {
			v.Set("endpoint", pg.Endpoint)
		}
		pg.Next = Prefix + "/reconciliation?" + v.Encode()
	}
	c.render(w, r, "reconciliations", "Conciliação", pg)
}

// reconciliationRun shows a run and a page of its lines, filtered by
// ?resultado=, ?tipo= and ?lado=, paged by ?after=.
func (c *Console) reconciliationRun(w http.ResponseWriter, r *http.Request) {
	id, ok := idParam(r)
	if !ok {
		c.fail(w, r, http.StatusNotFound, "Execução de conciliação desconhecida.")
		return
	}
	q := r.URL.Query()
	f := reconcile.LineFilter{Outcome: q.Get("resultado"), Kind: q.Get("tipo"), Side: q.Get("lado")}
	if f.Outcome != "" && !slices.Contains(lineOutcomes, f.Outcome) || f.Kind != "" && !slices.Contains(lineKinds, f.Kind) ||
		f.Side != "" && !slices.Contains(lineSides, f.Side) {
		c.fail(w, r, http.StatusBadRequest, "Filtro inválido: escolha resultado, tipo e lado da lista.")
		return
	}
	after, ok := afterParam(q)
	if !ok {
		c.fail(w, r, http.StatusBadRequest, "Paginação inválida: volte à primeira página.")
		return
	}
	run, err := reconcile.GetRun(r.Context(), c.DB, id)
	if errors.Is(err, reconcile.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "Execução de conciliação desconhecida.")
		return
	}
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	lines, next, err := reconcile.FilteredLines(r.Context(), c.DB, id, f, after, pageSize)
	if err != nil {
		c.failWith(w, r, err)
		return
	}
	pg := runPage{Run: run, Filter: f, Outcomes: lineOutcomes, Kinds: lineKinds, Uploaded: q.Get("enviado") == "1"}
	statuses := map[int64]divergences.Status{}
	for _, l := range lines { // at most a page of them
		row := runLine{LineResult: l}
		if id := l.DivergenceID; id != nil {
			st, seen := statuses[*id]
			if !seen {
				d, err := divergences.Get(r.Context(), c.DB, *id)
				if err != nil && !errors.Is(err, divergences.ErrNotFound) {
					c.failWith(w, r, err)
					return
				}
				st, statuses[*id] = d.Status, d.Status
			}
			row.DivergenceStatus = st
		}
		pg.Lines = append(pg.Lines, row)
	}
	if next > 0 {
		v := url.Values{"after": {strconv.FormatInt(next, 10)}}
		for k, s := range map[string]string{"resultado": f.Outcome, "tipo": f.Kind, "lado": f.Side} {
			if s != "" {
				v.Set(k, s)
			}
		}
		pg.Next = fmt.Sprintf("%s/reconciliation/%d?%s", Prefix, id, v.Encode())
	}
	c.render(w, r, "reconciliation", fmt.Sprintf("Conciliação #%d", id), pg)
}

// uploadStatement reconciles the uploaded CSV statement (admin) and
// sends the browser to its run's page. The form is multipart, its
// fields in order: csrf (checked before anything else is read), the
// endpoint, the optional window (de, ate: dd/mm/aaaa, São Paulo days),
// then the file, streamed into the run as it arrives and bounded by the
// endpoint's max_file_bytes, as POST /v1/reconciliations bounds it.
func (c *Console) uploadStatement(w http.ResponseWriter, r *http.Request) {
	var largest int64
	for _, e := range c.fileEndpoints() {
		largest = max(largest, e.MaxBytes)
	}
	if largest == 0 {
		c.fail(w, r, http.StatusNotFound, "Nenhum endpoint recebe extratos em arquivo: veja a seção reconciliation da configuração.")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		c.fail(w, r, http.StatusUnsupportedMediaType, "Envie o extrato pelo formulário de envio (multipart/form-data).")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, largest+maxForm)
	mr, err := r.MultipartReader()
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Formulário inválido.")
		return
	}
	s, _ := sessionFrom(r.Context())
	fields := map[string]string{}
	for _, name := range []string{"csrf", "endpoint", "de", "ate"} {
		p, err := mr.NextPart()
		if err != nil || p.FormName() != name || p.FileName() != "" {
			c.fail(w, r, http.StatusBadRequest, "Formulário inválido: recarregue a página e envie de novo.")
			return
		}
		b, err := io.ReadAll(io.LimitReader(p, 1024))
		if err != nil {
			c.refuse(w, r, uploadError(err))
			return
		}
		fields[name] = string(b)
		if name == "csrf" && !sameSecret(fields["csrf"], s.csrf()) {
			c.Log.WarnContext(r.Context(), "console form refused: bad CSRF value", "path", r.URL.Path)
			c.fail(w, r, http.StatusForbidden, "Formulário recusado (CSRF): recarregue a página e tente de novo.")
			return
		}
	}
	endpoint := fields["endpoint"]
	limit := c.Reconciliations.MaxFileBytes(endpoint)
	if limit == 0 {
		c.fail(w, r, http.StatusBadRequest, "Escolha um endpoint da lista: este não recebe extratos em arquivo.")
		return
	}
	from, to, err := c.uploadWindow(fields["de"], fields["ate"])
	if err != nil {
		c.refuse(w, r, err)
		return
	}
	file, err := mr.NextPart()
	if err != nil || file.FormName() != "arquivo" {
		c.fail(w, r, http.StatusBadRequest, "Escolha o arquivo CSV do extrato.")
		return
	}
	name := file.FileName()
	if name == "" || !utf8.ValidString(name) {
		c.fail(w, r, http.StatusBadRequest, "Escolha o arquivo CSV do extrato.")
		return
	}
	run, err := c.Reconciliations.ReconcileFile(r.Context(), endpoint, http.MaxBytesReader(w, file, limit), from, to)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		c.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("Arquivo grande demais: o endpoint %s recebe extratos de até %s.", endpoint, byteSize(limit)))
		return
	case err != nil && run.ID == 0:
		c.refuse(w, r, err)
		return
	case err != nil:
		// The run failed (a file it could not read, say): its page says why.
		c.Log.InfoContext(r.Context(), "console statement upload: run failed", "run", run.ID, "error", err)
	}
	http.Redirect(w, r, fmt.Sprintf("%s/reconciliation/%d?enviado=1", Prefix, run.ID), http.StatusSeeOther)
}

// uploadWindow is the window the form states, [de 00:00, ate + 1 day
// 00:00) in São Paulo; both empty is the span of the file's lines.
func (c *Console) uploadWindow(de, ate string) (time.Time, time.Time, error) {
	de, ate = strings.TrimSpace(de), strings.TrimSpace(ate)
	if de == "" && ate == "" {
		return time.Time{}, time.Time{}, nil
	}
	if de == "" || ate == "" {
		return time.Time{}, time.Time{}, formRefusal(http.StatusBadRequest, "Informe as duas datas da janela (de e até), ou nenhuma.")
	}
	from, err := c.parseDay("de", de)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	last, err := c.parseDay("até", ate)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	to := last.AddDate(0, 0, 1)
	if !to.After(from) {
		return time.Time{}, time.Time{}, formRefusal(http.StatusBadRequest, "A janela termina antes de começar.")
	}
	return from, to, nil
}

func uploadError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return formRefusal(http.StatusRequestEntityTooLarge, "Formulário grande demais.")
	}
	return formRefusal(http.StatusBadRequest, "Envio interrompido: tente de novo.")
}

// uploadRefusals are a statement run's refusals in Portuguese.
var uploadRefusals = []actRefusal{
	{reconcile.ErrUnknownEndpoint, http.StatusBadRequest, "Este endpoint não recebe extratos em arquivo."},
}

// byteSize writes n bytes as a person reads it (256 MiB).
func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
