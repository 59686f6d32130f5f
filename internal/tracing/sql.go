package tracing

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/XSAM/otelsql"
	"github.com/lib/pq"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// SQLOptions are the options of otelsql's driver wrapper: a span per
// statement, transaction begin, commit and rollback, carrying the
// statement's text (db.query.text) and never its arguments, which hold
// amounts and ids. A statement gets a span only under a span of its
// context (a request's or a delivery's): the background loops' polling
// makes none. Rows, session resets and connects get none either. A
// failed statement's span carries its SQLSTATE, never the error's text,
// which may quote a value (a key's, an amount a function refused).
func SQLOptions(tp trace.TracerProvider) []otelsql.Option {
	return []otelsql.Option{
		otelsql.WithTracerProvider(tp),
		otelsql.WithAttributes(semconv.DBSystemNamePostgreSQL),
		otelsql.WithSpanErrorAttributesGetter(errorAttributes),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			OmitConnResetSession: true,
			OmitRows:             true,
			OmitConnectorConnect: true,
			RecordError:          func(error) bool { return false },
			SpanFilter: func(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
				return trace.SpanContextFromContext(ctx).IsValid()
			},
		}),
	}
}

// errorAttributes names a failed statement's error by its kind and
// SQLSTATE only.
func errorAttributes(err error) []attribute.KeyValue {
	if errors.Is(err, driver.ErrSkip) {
		return nil // the driver's "not this way", not a failure
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return []attribute.KeyValue{semconv.ErrorTypeKey.String(string(pqErr.Code)), semconv.DBResponseStatusCode(string(pqErr.Code))}
	}
	return []attribute.KeyValue{semconv.ErrorTypeOther}
}
