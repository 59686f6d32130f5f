// Package console is the finance console: the month's books, a year's
// trend, divergences, periods, partners, corrections, reconciliation runs
// and a live strip of events, as HTML pages served by razao serve under
// /console. What it changes (admin only: resolving a divergence, by a
// note or by booking what it offers; closing a month; a partner's
// payout; proposing, approving and rejecting corrections; reconciling an
// uploaded statement) goes through the same functions the /v1 API calls,
// and every figure it shows comes from those functions too (reports,
// partners), so a page and the API can never disagree.
//
// Sign-in exchanges an API token for a session cookie (see session.go);
// the token's scopes decide what the pages allow, and its name is who
// acts. Templates, the style sheet and the scripts (the live strip, the
// upload's progress) are embedded in the binary; the
// Content-Security-Policy allows no inline script or style.
package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/adjustments"
	"github.com/razao/razao/auth"
	"github.com/razao/razao/internal/httplog"
	"github.com/razao/razao/postings"
	"github.com/razao/razao/reads"
)

// Prefix is where the console is mounted.
const Prefix = "/console"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// maxForm bounds the body of every console form (the longest is a
// divergence's resolution note: 2,000 characters, percent-encoded).
const maxForm = 64 << 10

// contentSecurityPolicy allows the console's own style sheet, script and
// images and nothing else: no inline script or style, no framing, forms
// only to the console itself.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Console holds what the pages need: the same database, ledger and event
// hub the /v1 API uses.
type Console struct {
	DB     *sqlx.DB
	Ledger *postings.Ledger
	Log    *slog.Logger
	Now    func() time.Time
	// Events is the SSE stream of /v1/events (events.Hub), served to the
	// live strip with the session's token in the request's context.
	Events http.Handler
	// Reconciliations is the service's reconciler, for the reconciliation
	// pages (/console/reconciliation: the runs, each run's lines, and the
	// upload of a statement file); nil leaves them and their menu entry
	// out.
	Reconciliations Reconciliations
	// Adjustments is how corrections are approved (the config's
	// adjustments section): four eyes unless ApprovalOff.
	Adjustments adjustments.Config
	// BehindTLSProxy says TLS ends at a proxy in front (behind_proxy):
	// the cookies are Secure although the request reached us in clear.
	BehindTLSProxy bool
	// Reads chooses the database of the pages that need not see their
	// own writes (the books, lists, journal, search and CSV): a
	// streaming standby while it is fresh enough (package reads); nil:
	// DB. Forms, single objects and sessions stay on DB.
	Reads *reads.Pool

	pages map[string]*template.Template
	// signIns counts failed sign-ins, by the clock Now.
	signIns *signInLimit
}

// New returns the console over db and ledger.
func New(db *sqlx.DB, ledger *postings.Ledger, events http.Handler, log *slog.Logger, now func() time.Time) (*Console, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &Console{DB: db, Ledger: ledger, Events: events, Log: log, Now: now}
	c.signIns = newSignInLimit(func() time.Time { return c.Now() }, SignInFailures, SignInFailureWindow, signInKeys)
	if err := c.parse(); err != nil {
		return nil, err
	}
	return c, nil
}

// pageNames are the templates, each parsed with the layout.
var pageNames = []string{"login", "month", "chart", "account", "divergences", "periods", "close", "partners", "partner", "error",
	"journal", "search", "charge", "adjustments", "reconciliations", "reconciliation", "webhooks", "webhook"}

func (c *Console) parse() error {
	loc := c.Ledger.Calendar().Location()
	funcs := template.FuncMap{
		"brl": brl, "count": count, "month": monthText, "monthOf": monthLabel, "when": dateTime(loc),
		"monthNames": monthOptions, "pt": pt, "accountName": accountName, "dc": dc, "zone": loc.String, "zoneName": zoneName(loc),
		"neg": func(n int64) int64 { return -n }, "add": func(a, b int) int { return a + b },
		"isoDay": isoDay,
	}
	for name, f := range findFuncs {
		funcs[name] = f
	}
	c.pages = map[string]*template.Template{}
	for _, name := range pageNames {
		files := append([]string{"templates/layout.html", "templates/" + name + ".html"}, partials[name]...)
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles, files...)
		if err != nil {
			return err
		}
		c.pages[name] = t
	}
	return nil
}

// Register mounts the console's routes on r.
func (c *Console) Register(r *mux.Router) {
	static, _ := fs.Sub(staticFiles, "static")
	page := func(method, path string, h http.HandlerFunc) {
		r.Handle(Prefix+path, c.headers(c.requireSession(h))).Methods(method)
	}
	admin := func(path string, h http.HandlerFunc) {
		r.Handle(Prefix+path, c.headers(c.requireSession(c.checkCSRF(c.requireAdmin(h))))).Methods(http.MethodPost)
	}
	r.Handle(Prefix, c.headers(http.RedirectHandler(Prefix+"/", http.StatusSeeOther))).Methods(http.MethodGet)
	r.Handle(Prefix+"/static/{file}", c.headers(http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))).Methods(http.MethodGet)
	r.Handle(Prefix+"/login", c.headers(http.HandlerFunc(c.loginForm))).Methods(http.MethodGet)
	r.Handle(Prefix+"/login", c.headers(http.HandlerFunc(c.login))).Methods(http.MethodPost)
	r.Handle(Prefix+"/logout", c.headers(c.requireSession(c.checkCSRF(http.HandlerFunc(c.logout))))).Methods(http.MethodPost)

	page(http.MethodGet, "/", c.home)
	page(http.MethodGet, "/month", c.pickMonth)
	page(http.MethodGet, "/month/{month}", c.month)
	page(http.MethodGet, "/exports/{kind}.csv", c.exportCSV)
	page(http.MethodGet, "/chart", c.chart)
	page(http.MethodGet, "/chart.svg", c.chartSVG)
	page(http.MethodGet, "/accounts/{code}", c.account)
	page(http.MethodGet, "/accounts/{code}/chart.svg", c.accountSVG)
	page(http.MethodGet, "/divergences", c.divergences)
	admin("/divergences/{id}/resolve", c.resolve)
	page(http.MethodGet, "/periods", c.periods)
	page(http.MethodGet, "/periods/{month}/close", c.closeConfirm)
	admin("/periods/{month}/close", c.closeMonth)
	page(http.MethodGet, "/partners", c.partnerList)
	page(http.MethodGet, "/partners/{id}", c.partner)
	page(http.MethodGet, "/journal", c.journal)
	page(http.MethodGet, "/search", c.search)
	page(http.MethodGet, "/charges/{id:.+}", c.charge) // .+: an id with a "/" is the console's 404 too
	admin("/partners/{id}/payouts", c.payout)
	page(http.MethodGet, "/adjustments", c.adjustmentsList)
	admin("/adjustments", c.proposeAdjustment)
	admin("/adjustments/reversal", c.reverseSet)
	admin("/adjustments/{id}/approve", c.approveAdjustment)
	admin("/adjustments/{id}/reject", c.rejectAdjustment)
	// The webhooks' pages are an admin's, as /v1/webhook-endpoints is: an
	// endpoint's URL may carry the app's own token.
	page(http.MethodGet, "/webhooks", c.adminOnly(c.webhooks))
	page(http.MethodGet, "/webhooks/{id:.+}", c.adminOnly(c.webhook)) // .+: an id with a "/" is the console's 404 too
	admin("/webhooks/{id}/enable", c.enableWebhook)
	admin("/webhooks/{id}/disable", c.disableWebhook)
	admin("/webhooks/{id}/replay", c.replayWebhook)
	if c.Events != nil {
		page(http.MethodGet, "/events", c.events)
	}
	if c.Reconciliations != nil {
		page(http.MethodGet, "/reconciliation", c.reconciliationRuns)
		page(http.MethodGet, "/reconciliation/{id}", c.reconciliationRun)
		// The upload's CSRF value is inside its multipart body, which
		// uploadStatement reads itself, the value first.
		r.Handle(Prefix+"/reconciliation/upload", c.headers(c.requireSession(c.requireAdmin(http.HandlerFunc(c.uploadStatement))))).
			Methods(http.MethodPost)
	}
}

// headers sets the security headers of every console response.
func (c *Console) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// requireSession lets through requests with a live session, putting it
// and its token in the context (the token as auth.Middleware would, so
// the event stream checks its revocation). A page asked for without one
// is sent to sign in; anything else is refused 401.
func (c *Console) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		var s session
		if err == nil {
			s, err = c.lookup(r.Context(), ck.Value)
		}
		switch {
		case err == nil:
		case errors.Is(err, http.ErrNoCookie), errors.Is(err, errNoSession):
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
				http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
				return
			}
			c.fail(w, r, http.StatusUnauthorized, "Sessão ausente ou expirada: entre de novo.")
			return
		default:
			c.Log.ErrorContext(r.Context(), "console session check failed", "error", err)
			c.fail(w, r, http.StatusServiceUnavailable, "Não foi possível verificar a sessão.")
			return
		}
		httplog.SetToken(r.Context(), s.token.Name)
		ctx := context.WithValue(auth.NewContext(r.Context(), s.token), sessionKey{}, s)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// checkCSRF refuses a form without the session's CSRF value (403). The
// body is bounded first.
func (c *Console) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.parseForm(w, r) {
			return
		}
		s, _ := sessionFrom(r.Context())
		if !sameSecret(r.PostForm.Get("csrf"), s.csrf()) {
			c.Log.WarnContext(r.Context(), "console form refused: bad CSRF value", "path", r.URL.Path)
			c.fail(w, r, http.StatusForbidden, "Formulário recusado (CSRF): recarregue a página e tente de novo.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// parseForm reads a bounded form body; on failure it answers itself.
func (c *Console) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			c.fail(w, r, http.StatusRequestEntityTooLarge, "Formulário grande demais.")
			return false
		}
		c.fail(w, r, http.StatusBadRequest, "Formulário inválido.")
		return false
	}
	return true
}

// adminOnly is requireAdmin of a page's handler.
func (c *Console) adminOnly(h http.HandlerFunc) http.HandlerFunc { return c.requireAdmin(h).ServeHTTP }

// requireAdmin lets through sessions whose token has the admin scope.
func (c *Console) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := sessionFrom(r.Context())
		if !s.token.Has(auth.Admin) {
			c.fail(w, r, http.StatusForbidden, "Esta ação exige um token com escopo admin.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// view is what every page template gets: the page's own data in Data.
type view struct {
	Title string
	Nav   string
	// Signed is false on the sign-in page.
	Signed         bool
	TokenName      string
	Admin          bool
	CSRF           string
	Reconciliation bool
	Data           any
}

// render writes page name with data, status 200.
func (c *Console) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	c.renderStatus(w, r, http.StatusOK, name, title, data)
}

func (c *Console) renderStatus(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	v := view{Title: title, Nav: name, Data: data, Reconciliation: c.Reconciliations != nil}
	if s, ok := sessionFrom(r.Context()); ok {
		v.Signed, v.TokenName, v.Admin, v.CSRF = true, s.token.Name, s.token.Has(auth.Admin), s.csrf()
	}
	var b bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&b, "layout", v); err != nil {
		c.Log.ErrorContext(r.Context(), "console page failed to render", "page", name, "error", err)
		http.Error(w, "erro interno", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fail answers an error page with status and a message for the user.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.renderStatus(w, r, status, "error", "Erro", msg)
}

// reads is the database of a page's reads that need not see their own
// writes; a browser that has just posted a form reads from the primary
// (reads.Pool.Middleware), so the page a form redirects to shows it.
func (c *Console) reads(ctx context.Context) *sqlx.DB {
	if c.Reads == nil {
		return c.DB
	}
	return c.Reads.DB(ctx)
}
