package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/razao/razao/console"
	"github.com/razao/razao/reconcile"
)

// consoleReconciliations is the console's reconciliation pages' hook
// (console.Console.Reconciliations): the service's reconciler, or, when
// the config reconciles no endpoint, one that takes no file, so the runs'
// history stays readable.
func consoleReconciliations(rec *reconcile.Reconciler) console.Reconciliations {
	if rec == nil {
		return noReconciler{}
	}
	return rec
}

// noReconciler is a service without a reconciliation section: no
// endpoint takes a statement file.
type noReconciler struct{}

func (noReconciler) Endpoints() []string       { return nil }
func (noReconciler) MaxFileBytes(string) int64 { return 0 }
func (noReconciler) ReconcileFile(_ context.Context, endpoint string, _ io.Reader, _, _ time.Time) (reconcile.Run, error) {
	return reconcile.Run{}, fmt.Errorf("%w: %q (no reconciliation section in the config)", reconcile.ErrUnknownEndpoint, endpoint)
}
