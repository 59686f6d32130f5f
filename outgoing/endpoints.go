package outgoing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/razao/razao/events"
	"github.com/razao/razao/internal/pgarray"
)

// Endpoint is a webhook endpoint as an operator sees it. The secret is in
// it only in the answers to Create and Rotate: it is shown once.
type Endpoint struct {
	ID          int64    `json:"id"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	Topics      []string `json:"topics"` // empty: every topic
	Enabled     bool     `json:"enabled"`
	// DisabledReason is "operator" or "failing" (every attempt of the
	// schedule failed) while disabled.
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	Secret         string     `json:"secret,omitempty"`
	// PreviousSecretUntil: a rotated-out secret still signs until then.
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
	// Cursor is the position in the outbox the endpoint has reached: every
	// event up to it was delivered or is not wanted.
	Cursor string `json:"cursor"`
	// Attempts failed on the head event so far, its id, when it is tried
	// next, and since when the endpoint has been failing.
	FailedAttempts int        `json:"failed_attempts"`
	HeadEventID    *int64     `json:"head_event_id,omitempty"`
	NextAttemptAt  *time.Time `json:"next_attempt_at,omitempty"`
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

// endpointRow is a row as read by endpointColumns.
type endpointRow struct {
	ID             int64          `db:"id"`
	URL            string         `db:"url"`
	Description    string         `db:"description"`
	Topics         pq.StringArray `db:"topics"`
	Enabled        bool           `db:"enabled"`
	DisabledReason sql.NullString `db:"disabled_reason"`
	DisabledAt     sql.NullTime   `db:"disabled_at"`
	PreviousUntil  sql.NullTime   `db:"previous_until"`
	AfterXID       string         `db:"after_xid"`
	AfterID        int64          `db:"after_id"`
	Attempt        int            `db:"attempt"`
	HeadEventID    sql.NullInt64  `db:"head_event_id"`
	NextAt         time.Time      `db:"next_at"`
	FailingSince   sql.NullTime   `db:"failing_since"`
	CreatedAt      time.Time      `db:"created_at"`
	UpdatedAt      time.Time      `db:"updated_at"`
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func (r endpointRow) endpoint(now time.Time) Endpoint {
	e := Endpoint{ID: r.ID, URL: r.URL, Description: r.Description, Topics: []string(r.Topics), Enabled: r.Enabled,
		DisabledReason: r.DisabledReason.String, DisabledAt: timePtr(r.DisabledAt), Cursor: r.AfterXID + "-" + strconv.FormatInt(r.AfterID, 10),
		FailedAttempts: r.Attempt, FailingSince: timePtr(r.FailingSince), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if e.Topics == nil {
		e.Topics = []string{}
	}
	if r.PreviousUntil.Valid && r.PreviousUntil.Time.After(now) {
		e.PreviousSecretUntil = timePtr(r.PreviousUntil)
	}
	if r.Attempt > 0 {
		if r.HeadEventID.Valid {
			e.HeadEventID = &r.HeadEventID.Int64
		}
		if r.Enabled {
			t := r.NextAt.UTC()
			e.NextAttemptAt = &t
		}
	}
	return e
}

// Service manages the endpoints: what the API and the CLI call.
type Service struct {
	DB     *sqlx.DB
	Config Config
	Now    func() time.Time
}

func (s Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s Service) guard() Guard {
	return Guard{AllowPrivate: s.Config.AllowPrivateTargets, Resolve: s.Config.Resolve}
}

// NewEndpoint is what Create takes.
type NewEndpoint struct {
	URL         string   `json:"url"`
	Description string   `json:"description"`
	Topics      []string `json:"topics"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
}

// checkTopics checks and sorts a topic list (nil: every topic).
func checkTopics(ts []string) ([]string, error) {
	if len(ts) > MaxTopics {
		return nil, fmt.Errorf("%w: at most %d topics", ErrInvalid, MaxTopics)
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		if !events.Topic(t).Valid() {
			return nil, fmt.Errorf("%w: unknown topic %q", ErrInvalid, t)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func checkDescription(d string) error {
	if !utf8.ValidString(d) || utf8.RuneCountInString(d) > MaxDescriptionLength {
		return fmt.Errorf("%w: description must be valid text of at most %d characters", ErrInvalid, MaxDescriptionLength)
	}
	return nil
}

func (s Service) checkURL(ctx context.Context, raw string) error {
	u, err := parseTarget(raw)
	if err != nil {
		return err
	}
	if err := s.Config.checkScheme(u.Scheme); err != nil {
		return err
	}
	return s.guard().Check(ctx, u)
}

// Create registers an endpoint and returns it with its secret, the only
// time the secret is shown. It receives the events committed from now on.
func (s Service) Create(ctx context.Context, n NewEndpoint) (Endpoint, error) {
	if err := s.checkURL(ctx, n.URL); err != nil {
		return Endpoint{}, err
	}
	if err := checkDescription(n.Description); err != nil {
		return Endpoint{}, err
	}
	topics, err := checkTopics(n.Topics)
	if err != nil {
		return Endpoint{}, err
	}
	secret, err := newSecret()
	if err != nil {
		return Endpoint{}, err
	}
	stored, err := s.sealNew(ctx, secret)
	if err != nil {
		return Endpoint{}, err
	}
	enabled := n.Enabled == nil || *n.Enabled
	start, err := events.Now(ctx, s.DB)
	if err != nil {
		return Endpoint{}, err
	}
	xid, id, _ := strings.Cut(start, "-")
	now := s.now()
	var r endpointRow
	if err := sqlx.GetContext(ctx, s.DB, &r, insertEndpointSQL, n.URL, n.Description, pgarray.Text(topics), enabled, stored, now, xid, id); err != nil {
		return Endpoint{}, fmt.Errorf("create webhook endpoint: %w", err)
	}
	e := r.endpoint(now)
	e.Secret = secret
	return e, nil
}

// sealNew is a new secret as stored: sealed under the key when there is
// one. The rule: once any stored secret is sealed, a secret is never
// stored in the clear. A process without the key (the CLI run without
// the config, a replica missing the variable) refuses to create or
// rotate one (ErrKeyRequired) rather than weaken what the key protects,
// unseen. Secrets stored in the clear before a key was configured
// still sign (they are sealed when rotated); a keyed process and a
// keyless one storing at the same instant is the one gap, left open:
// closing it would need a lock on every creation for a misconfiguration
// the next creation reports.
func (s Service) sealNew(ctx context.Context, secret string) ([]byte, error) {
	if s.Config.Key == nil {
		var sealed bool
		if err := sqlx.GetContext(ctx, s.DB, &sealed, anySealedSQL); err != nil {
			return nil, fmt.Errorf("look for sealed webhook secrets: %w", err)
		}
		if sealed {
			return nil, ErrKeyRequired
		}
	}
	return seal(s.Config.Key, secret)
}

// List returns every endpoint, by id.
func (s Service) List(ctx context.Context) ([]Endpoint, error) {
	var rows []endpointRow
	if err := sqlx.SelectContext(ctx, s.DB, &rows, listEndpointsSQL); err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	now := s.now()
	out := make([]Endpoint, len(rows))
	for i, r := range rows {
		out[i] = r.endpoint(now)
	}
	return out, nil
}

// Get returns one endpoint.
func (s Service) Get(ctx context.Context, id int64) (Endpoint, error) {
	var r endpointRow
	if err := sqlx.GetContext(ctx, s.DB, &r, getEndpointSQL, id); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Endpoint{}, fmt.Errorf("webhook endpoint %d: %w", id, ErrNotFound)
		}
		return Endpoint{}, fmt.Errorf("get webhook endpoint %d: %w", id, err)
	}
	return r.endpoint(s.now()), nil
}

// Patch is what Update changes; nil fields stay as they are.
type Patch struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	Topics      *[]string `json:"topics"`
	Enabled     *bool     `json:"enabled"`
}

// Update changes an endpoint. Enabling one that was disabled resumes
// delivery at the event it stopped on, its failures forgotten.
func (s Service) Update(ctx context.Context, id int64, p Patch) (Endpoint, error) {
	var url, desc sql.NullString
	var topics any
	if p.URL != nil {
		if err := s.checkURL(ctx, *p.URL); err != nil {
			return Endpoint{}, err
		}
		url = sql.NullString{String: *p.URL, Valid: true}
	}
	if p.Description != nil {
		if err := checkDescription(*p.Description); err != nil {
			return Endpoint{}, err
		}
		desc = sql.NullString{String: *p.Description, Valid: true}
	}
	if p.Topics != nil {
		ts, err := checkTopics(*p.Topics)
		if err != nil {
			return Endpoint{}, err
		}
		topics = pgarray.Text(ts)
	}
	var enabled sql.NullBool
	if p.Enabled != nil {
		enabled = sql.NullBool{Bool: *p.Enabled, Valid: true}
	}
	now := s.now()
	var r endpointRow
	if err := sqlx.GetContext(ctx, s.DB, &r, updateEndpointSQL, id, url, desc, topics, enabled, now); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Endpoint{}, fmt.Errorf("webhook endpoint %d: %w", id, ErrNotFound)
		}
		return Endpoint{}, fmt.Errorf("update webhook endpoint %d: %w", id, err)
	}
	return r.endpoint(now), nil
}

// Delete removes an endpoint, its attempts and replays.
func (s Service) Delete(ctx context.Context, id int64) error {
	res, err := s.DB.ExecContext(ctx, deleteEndpointSQL, id)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("webhook endpoint %d: %w", id, ErrNotFound)
	}
	return nil
}

// Rotate gives an endpoint a new secret, returned (once) in the answer.
// The old one goes on signing beside it for Config.RotationOverlap (or
// overlap, when positive): every delivery carries both signatures, so the
// app can switch to the new secret whenever it likes during that time.
func (s Service) Rotate(ctx context.Context, id int64, overlap time.Duration) (Endpoint, error) {
	if overlap <= 0 {
		overlap = s.Config.withDefaults().RotationOverlap
	}
	if overlap > 30*24*time.Hour {
		return Endpoint{}, fmt.Errorf("%w: overlap of at most 30 days", ErrInvalid)
	}
	secret, err := newSecret()
	if err != nil {
		return Endpoint{}, err
	}
	stored, err := s.sealNew(ctx, secret)
	if err != nil {
		return Endpoint{}, err
	}
	now := s.now()
	var r endpointRow
	if err := sqlx.GetContext(ctx, s.DB, &r, rotateSQL, id, stored, now.Add(overlap), now); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Endpoint{}, fmt.Errorf("webhook endpoint %d: %w", id, ErrNotFound)
		}
		return Endpoint{}, fmt.Errorf("rotate webhook endpoint %d's secret: %w", id, err)
	}
	e := r.endpoint(now)
	e.Secret = secret
	return e, nil
}

// Replay asks for events to be sent again: one event (EventID), or those
// created in [Since, Until). Only events the endpoint wants and has
// already passed are queued (later ones are on their way); they go ahead
// of its next new event, oldest first, with the same webhook-id as
// before, so an app that keeps ids must forget them to process a replay.
type Replay struct {
	EventID int64      `json:"event_id"`
	Since   *time.Time `json:"since"`
	Until   *time.Time `json:"until"`
}

// Replay queues what r names and returns how many events it queued.
func (s Service) Replay(ctx context.Context, id int64, r Replay) (int, error) {
	var eventID sql.NullInt64
	var since, until sql.NullTime
	switch {
	case r.EventID > 0 && r.Since == nil && r.Until == nil:
		eventID = sql.NullInt64{Int64: r.EventID, Valid: true}
	case r.EventID == 0 && r.Since != nil && r.Until != nil && r.Until.After(*r.Since):
		since, until = sql.NullTime{Time: *r.Since, Valid: true}, sql.NullTime{Time: *r.Until, Valid: true}
	default:
		return 0, fmt.Errorf("%w: a replay names an event_id, or since and until (since before until)", ErrInvalid)
	}
	var got struct {
		Found    int        `db:"found"`
		Queued   int        `db:"queued"`
		Archived *time.Time `db:"archived"`
	}
	if err := sqlx.GetContext(ctx, s.DB, &got, replaySQL, id, eventID, since, until, MaxReplay, s.now()); err != nil {
		return 0, fmt.Errorf("replay to webhook endpoint %d: %w", id, err)
	}
	if got.Found == 0 {
		return 0, fmt.Errorf("webhook endpoint %d: %w", id, ErrNotFound)
	}
	if got.Archived != nil {
		// Nothing queued: a replay with a hole in it, unannounced, is
		// what this refuses.
		through := got.Archived.UTC().Format(time.RFC3339Nano)
		return 0, fmt.Errorf("%w: events created up to %s may have been archived and purged, and the range starts at %s; "+
			"ask for a range starting after %s, and read the events before it from the archive files of kind outbox (razao archive list)",
			ErrRangeArchived, through, since.Time.UTC().Format(time.RFC3339Nano), through)
	}
	if eventID.Valid && got.Queued == 0 {
		var exists bool
		if err := sqlx.GetContext(ctx, s.DB, &exists, eventExistsSQL, eventID.Int64); err != nil {
			return 0, fmt.Errorf("replay event %d: %w", eventID.Int64, err)
		}
		if !exists {
			return 0, fmt.Errorf("event %d: %w", eventID.Int64, ErrEventNotFound)
		}
	}
	return got.Queued, nil
}

// Attempt is one delivery attempt as logged.
type Attempt struct {
	ID         int64  `db:"id" json:"id"`
	EndpointID int64  `db:"endpoint_id" json:"endpoint_id"`
	EventID    int64  `db:"event_id" json:"event_id"`
	Topic      string `db:"topic" json:"topic"`
	Attempt    int    `db:"attempt" json:"attempt"`
	Replay     bool   `db:"replay" json:"replay"`
	// Status is the HTTP status answered, or nil when none was (Error
	// says why: a refused address, a timeout, a connection error).
	Status    *int       `db:"status" json:"status"`
	Error     *string    `db:"error" json:"error"`
	LatencyMS int        `db:"latency_ms" json:"latency_ms"`
	Response  string     `db:"response" json:"response"`
	NextAt    *time.Time `db:"next_at" json:"next_attempt_at"`
	At        time.Time  `db:"at" json:"at"`
}

// MaxAttemptsPage bounds one page of attempts.
const MaxAttemptsPage = 200

// Attempts returns an endpoint's attempts, newest first, before the
// attempt id before (0: the newest), at most limit (1..MaxAttemptsPage).
func (s Service) Attempts(ctx context.Context, id int64, before int64, limit int) ([]Attempt, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxAttemptsPage {
		limit = MaxAttemptsPage
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	out := []Attempt{}
	if err := sqlx.SelectContext(ctx, s.DB, &out, attemptsSQL, id, before, limit); err != nil {
		return nil, fmt.Errorf("attempts of webhook endpoint %d: %w", id, err)
	}
	for i := range out {
		out[i].At = out[i].At.UTC()
		if out[i].NextAt != nil {
			t := out[i].NextAt.UTC()
			out[i].NextAt = &t
		}
	}
	return out, nil
}
