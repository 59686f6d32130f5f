// Package webhook is razao's front door for PSPs: the HTTP side of a
// delivery. It serves the configured endpoints (Endpoint), bounds what an
// unauthenticated body may cost (the flood gate, unauthenticated.go),
// checks an endpoint's client certificates (mtls.go), authenticates each
// delivery on its raw bytes and parses it with the endpoint's scheme
// (webhook/scheme), and hands what it verified to the inbox (package
// inbox: Inbox.Check, then Inbox.Store or Inbox.StoreMalformed). It
// answers 2xx only once the inbox has committed the delivery; applying it
// to the charge and the ledger is the inbox's, by one path whatever
// brought the delivery there.
package webhook
