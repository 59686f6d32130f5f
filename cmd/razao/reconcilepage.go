package main

import (
	"html/template"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/money"
	"github.com/razao/razao/reconcile"
)

// reconciliationPage is the finance console's reconciliation page (its
// hook, console.Console.Reconciliation): the latest runs, and with ?run=ID
// that run's lines that did not match, both sides. The console serves it
// behind the session; it reads through the functions GET
// /v1/reconciliations calls.
func reconciliationPage(db *sqlx.DB, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data := struct {
			Runs  []reconcile.Run
			Run   *reconcile.Run
			Lines []reconcile.LineResult
		}{}
		var err error
		if data.Runs, err = reconcile.ListRuns(r.Context(), db, "", 0, 50); err != nil {
			log.ErrorContext(r.Context(), "console reconciliation", "error", err)
			http.Error(w, "Erro interno", http.StatusInternalServerError)
			return
		}
		if v := r.URL.Query().Get("run"); v != "" {
			id, perr := strconv.ParseInt(v, 10, 64)
			run, gerr := reconcile.GetRun(r.Context(), db, id)
			if perr != nil || gerr != nil {
				http.Error(w, "Execução não encontrada", http.StatusNotFound)
				return
			}
			data.Run = &run
			if data.Lines, err = reconcile.Lines(r.Context(), db, id, true, 0, reconcile.MaxPage); err != nil {
				log.ErrorContext(r.Context(), "console reconciliation", "error", err)
				http.Error(w, "Erro interno", http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := reconciliationTmpl.Execute(w, data); err != nil {
			log.ErrorContext(r.Context(), "console reconciliation", "error", err)
		}
	})
}

var reconciliationTmpl = template.Must(template.New("reconciliation").Funcs(template.FuncMap{
	"reais": func(v *int64) string {
		if v == nil {
			return ""
		}
		return "R$ " + money.FormatReais(*v, ',')
	},
	"ptr": func(v int64) *int64 { return &v },
	"str": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
}).Parse(`<!doctype html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conciliação · razão</title>
<link rel="stylesheet" href="/console/static/console.css">
</head>
<body>
<main id="main">
<p><a href="/console/">← console</a></p>
<h1>Conciliação</h1>
{{- with .Run}}
<h2>Execução {{.ID}}: {{.Endpoint}} ({{.Source}})</h2>
<p>{{.From.UTC.Format "2006-01-02 15:04:05"}} a {{.To.UTC.Format "2006-01-02 15:04:05"}} UTC{{if .Final}}, janela final{{end}}:
{{.Lines}} linhas, {{.Matched}} conciliadas, {{.Booked}} lançadas do extrato, {{.Divergences}} divergências.</p>
{{- end}}
{{- if .Run}}
<table>
<thead><tr><th>Linha</th><th>Lado</th><th>Tipo</th><th>Resultado</th><th>Motivo</th><th>Id do PSP</th><th>Cobrança</th><th>Extrato</th><th>Razão</th><th>Detalhe</th></tr></thead>
<tbody>
{{- range .Lines}}
<tr><td>{{.Line}}</td><td>{{.Side}}</td><td>{{.Kind}}</td><td>{{.Outcome}}</td><td>{{str .Reason}}</td><td>{{.PSPID}}</td>
<td>{{if .ChargeID}}{{str .ChargeID}}{{else}}{{.ChargeRef}}{{end}}</td><td>{{if eq .Side "statement"}}{{reais (ptr .Amount)}}{{end}}</td><td>{{reais .LedgerAmount}}</td><td>{{.Detail}}</td></tr>
{{- else}}
<tr><td colspan="10">Todas as linhas conciliadas.</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
<h2>Execuções recentes</h2>
<table>
<thead><tr><th>Execução</th><th>Endpoint</th><th>Janela (UTC)</th><th>Estado</th><th>Linhas</th><th>Conciliadas</th><th>Lançadas</th><th>Divergências</th><th>Erro</th></tr></thead>
<tbody>
{{- range .Runs}}
<tr><td><a href="/console/reconciliation?run={{.ID}}">{{.ID}}</a></td><td>{{.Endpoint}} ({{.Source}})</td>
<td>{{.From.UTC.Format "2006-01-02 15:04"}} a {{.To.UTC.Format "2006-01-02 15:04"}}{{if .Final}} (final){{end}}</td>
<td>{{.Status}}</td><td>{{.Lines}}</td><td>{{.Matched}}</td><td>{{.Booked}}</td><td>{{.Divergences}}</td><td>{{str .Error}}</td></tr>
{{- else}}
<tr><td colspan="9">Nenhuma execução ainda.</td></tr>
{{- end}}
</tbody>
</table>
</main>
</body>
</html>
`))
