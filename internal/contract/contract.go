// Package contract holds razao's tests to the OpenAPI document
// (api/openapi.yaml): Middleware validates every response a test's server
// sends against it with pb33f/libopenapi-validator, a maintained OpenAPI
// 3.1 validator. Only tests import it.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/razao/razao/api"
	"github.com/razao/razao/internal/problem"
)

var (
	once  sync.Once
	model *v3.Document
	valid validator.Validator
	err   error
	// mu serialises validations: the validator's caches are not
	// documented as safe for concurrent use.
	mu sync.Mutex
)

// load builds the validator once per test binary.
func load() (validator.Validator, *v3.Document, error) {
	once.Do(func() {
		doc, e := libopenapi.NewDocument(api.OpenAPIYAML)
		if e != nil {
			err = fmt.Errorf("openapi.yaml: %w", e)
			return
		}
		m, e := doc.BuildV3Model()
		if e != nil {
			err = fmt.Errorf("openapi.yaml: build the model: %w", e)
			return
		}
		model = &m.Model
		valid = validator.NewValidatorFromV3Model(model)
	})
	return valid, model, err
}

// Validate checks the document itself against the OpenAPI 3.1 schema.
func Validate(t testing.TB) {
	t.Helper()
	doc, e := libopenapi.NewDocument(api.OpenAPIYAML)
	if e != nil {
		t.Fatalf("openapi.yaml: %v", e)
	}
	v, errs := validator.NewValidator(doc)
	for _, e := range errs {
		t.Errorf("openapi.yaml: %v", e)
	}
	if v == nil {
		return
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("openapi.yaml: %s: %s", e.Message, e.Reason)
		}
	}
}

// Model is the document's OpenAPI 3 model, for tests that hold it against
// the router.
func Model(t testing.TB) *v3.Document {
	t.Helper()
	_, m, e := load()
	if e != nil {
		t.Fatal(e)
	}
	return m
}

// maxBody bounds what a response's validation reads; a larger body (a big
// CSV export) is validated by its status and headers only.
const maxBody = 4 << 20

// Middleware serves next and fails t for every response that the document
// does not allow: an undocumented status, a body that does not fit its
// schema, a content type it does not declare. A path no operation has is
// answered 404 not-found or 405 method-not-allowed problems, as the
// document's components/responses say. An event stream is checked by its
// status and content type: its body never ends. The console's pages under
// /console/ are passed through unchecked.
func Middleware(t testing.TB, next http.Handler) http.Handler {
	v, m, e := load()
	if e != nil {
		t.Fatal(e)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/") {
			// The finance console's HTML pages are not part of the API
			// the document describes.
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		if msg := check(v, m, r, rec); msg != "" {
			t.Errorf("%s %s answered %d, which the OpenAPI document does not allow: %s\nbody: %.300s",
				r.Method, r.URL.RequestURI(), rec.status, msg, rec.body.Bytes())
		}
	})
}

func check(v validator.Validator, m *v3.Document, r *http.Request, rec *recorder) string {
	mu.Lock()
	defer mu.Unlock()
	item, _, _ := paths.FindPath(r, m, nil)
	if item == nil {
		return unmatched(r, rec)
	}
	if item.GetOperations().GetOrZero(strings.ToLower(r.Method)) == nil {
		// A documented path asked with a method it does not take: the
		// router's 405, or the answer the path documents for that status
		// under its own method (the webhook route's 405).
		if unmatched(r, rec) == "" {
			return ""
		}
		for method := range item.GetOperations().KeysFromOldest() {
			if declares(item, method, rec.status) {
				as := r.Clone(r.Context())
				as.Method = strings.ToUpper(method)
				return validate(v, item, as, rec)
			}
		}
		return unmatched(r, rec)
	}
	if msg := validate(v, item, r, rec); msg != "" && unmatched(r, rec) != "" {
		// A path the router matches no route for (an escaped slash in a
		// variable, say) is answered by the router's problem, whatever
		// operation the document's template would match.
		return msg
	}
	return ""
}

// validate checks rec, the answer to r, against r's operation in item.
func validate(v validator.Validator, item *v3.PathItem, r *http.Request, rec *recorder) string {
	body := rec.body.Bytes()
	if rec.truncated || strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		body = nil
	}
	res := &http.Response{StatusCode: rec.status, Header: rec.Header().Clone(), Body: io.NopCloser(bytes.NewReader(body)), Request: r}
	if body == nil {
		res.Header.Del("Content-Type") // nothing to validate it against
		if !declares(item, r.Method, rec.status) {
			return fmt.Sprintf("status %d is not among the operation's responses", rec.status)
		}
		return ""
	}
	if ok, errs := v.ValidateHttpResponse(r, res); !ok {
		var msgs []string
		for _, e := range errs {
			s := e.Message
			if e.Reason != "" {
				s += ": " + e.Reason
			}
			for _, se := range e.SchemaValidationErrors {
				s += "; " + se.FieldPath + ": " + se.Reason
			}
			msgs = append(msgs, s)
		}
		return strings.Join(msgs, " | ")
	}
	return ""
}

// declares reports whether the operation lists status (or its class, or
// a default).
func declares(item *v3.PathItem, method string, status int) bool {
	op := item.GetOperations().GetOrZero(strings.ToLower(method))
	if op == nil || op.Responses == nil {
		return false
	}
	if op.Responses.Default != nil {
		return true
	}
	for code := range op.Responses.Codes.KeysFromOldest() {
		if code == fmt.Sprint(status) || code == fmt.Sprintf("%dXX", status/100) {
			return true
		}
	}
	return false
}

// unmatched checks the answer to a request no operation takes: the
// router's 404 or 405 problem.
func unmatched(r *http.Request, rec *recorder) string {
	want := map[int]string{http.StatusNotFound: "not-found", http.StatusMethodNotAllowed: "method-not-allowed"}[rec.status]
	if want == "" {
		return "no operation takes this method and path, and the answer is not the router's 404 or 405"
	}
	var p problem.Problem
	if err := json.Unmarshal(rec.body.Bytes(), &p); err != nil || p.Type != problem.Base+want || p.Status != rec.status ||
		rec.Header().Get("Content-Type") != "application/problem+json" {
		return fmt.Sprintf("an unmatched path's answer is not a %s problem", want)
	}
	if rec.status == http.StatusMethodNotAllowed && rec.Header().Get("Allow") == "" {
		return "a 405 without Allow"
	}
	return ""
}

// recorder passes the response through and keeps its status and the
// first maxBody bytes of its body.
type recorder struct {
	http.ResponseWriter
	status    int
	wrote     bool
	body      bytes.Buffer
	truncated bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	if r.body.Len()+len(p) <= maxBody {
		r.body.Write(p)
	} else {
		r.truncated = true
	}
	return r.ResponseWriter.Write(p)
}

// Flush lets an event stream through as it is written.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer beneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
