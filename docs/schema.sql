-- The current schema, generated from a database the migrations in sql/
-- built (TestSchemaDumpIsCurrent keeps it so). Read it; never apply it:
-- the numbered migrations are what razao migrate runs.
-- Partitions are not listed: each has its parent's columns, constraints,
-- indexes and triggers (razao verify holds their triggers to it).

CREATE TABLE access_grants (
    charge_id text NOT NULL,
    access text NOT NULL,
    granted_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE accounts (
    id bigint NOT NULL DEFAULT nextval('accounts_id_seq'::regclass),
    code text NOT NULL,
    type text NOT NULL,
    normal_side text NOT NULL,
    currency character(3) NOT NULL DEFAULT 'BRL'::bpchar,
    parent_id bigint,
    created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE adjustments (
    id bigint NOT NULL DEFAULT nextval('adjustments_id_seq'::regclass),
    kind text NOT NULL,
    status text NOT NULL DEFAULT 'proposed'::text,
    idempotency_key text,
    request_hash text NOT NULL,
    reason text NOT NULL,
    legs jsonb NOT NULL,
    amount bigint NOT NULL,
    currency character(3) NOT NULL,
    competence date,
    charge_id text,
    partner text,
    divergence_id bigint,
    reverses bigint,
    four_eyes boolean NOT NULL,
    proposed_by text NOT NULL,
    proposed_by_token bigint,
    proposed_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    decided_by text,
    decided_by_token bigint,
    decided_at timestamp with time zone,
    decision_note text,
    posting_set_id bigint
);

CREATE TABLE api_tokens (
    id bigint NOT NULL DEFAULT nextval('api_tokens_id_seq'::regclass),
    name text NOT NULL,
    token_hash bytea NOT NULL,
    scopes text[] NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    revoked_at timestamp with time zone
);

CREATE TABLE archives (
    id bigint NOT NULL DEFAULT nextval('archives_id_seq'::regclass),
    kind text NOT NULL,
    month date NOT NULL,
    file_name text NOT NULL,
    sha256 text NOT NULL,
    rows bigint NOT NULL,
    bytes bigint NOT NULL,
    archived_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE charges (
    id text NOT NULL,
    psp_ref text,
    amount bigint NOT NULL,
    currency character(3) NOT NULL DEFAULT 'BRL'::bpchar,
    partner text,
    commission_bp integer NOT NULL DEFAULT 0,
    access text NOT NULL DEFAULT ''::text,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    state text NOT NULL DEFAULT 'pending'::text,
    paid_amount bigint,
    fee bigint,
    commission bigint NOT NULL DEFAULT 0,
    paid_at timestamp with time zone,
    paid_ref text,
    refunded_amount bigint NOT NULL DEFAULT 0,
    failed_at timestamp with time zone,
    request_hash text NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    merchant text
);

CREATE TABLE closed_periods (
    month date NOT NULL,
    closed_at timestamp with time zone NOT NULL DEFAULT now(),
    closed_by text NOT NULL DEFAULT CURRENT_USER,
    closed_xid xid8 DEFAULT pg_current_xact_id()
);

CREATE TABLE console_sessions (
    session_hash bytea NOT NULL,
    token_id bigint NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE divergences (
    id bigint NOT NULL DEFAULT nextval('divergences_id_seq'::regclass),
    inbox_id bigint,
    charge_id text,
    reason text NOT NULL,
    detail text NOT NULL DEFAULT ''::text,
    status text NOT NULL DEFAULT 'open'::text,
    resolution_note text,
    resolved_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    source text NOT NULL DEFAULT 'webhook'::text,
    reconciliation_key text,
    endpoint text,
    run_id bigint,
    run_line bigint,
    line_kind text,
    statement_psp_id text,
    statement_charge_ref text,
    statement_refund_id text,
    statement_amount bigint,
    statement_fee bigint,
    statement_at timestamp with time zone,
    ledger_refund_id text,
    ledger_amount bigint,
    ledger_fee bigint,
    ledger_inbox_id bigint,
    resolution text,
    resolution_set_id bigint,
    resolution_credit_id bigint,
    detail_code text,
    detail_args jsonb
);

CREATE TABLE export_runs (
    id bigint NOT NULL DEFAULT nextval('export_runs_id_seq'::regclass),
    slot timestamp with time zone NOT NULL,
    kind text NOT NULL,
    dialect text NOT NULL,
    month date NOT NULL,
    status text NOT NULL DEFAULT 'running'::text,
    attempts integer NOT NULL DEFAULT 1,
    claimed_by text NOT NULL,
    lease_until timestamp with time zone NOT NULL,
    file_name text,
    sha256 text,
    rows bigint,
    bytes bigint,
    last_error text,
    started_at timestamp with time zone NOT NULL DEFAULT now(),
    finished_at timestamp with time zone
);

CREATE TABLE inbox (
    id bigint NOT NULL DEFAULT nextval('inbox_id_seq'::regclass),
    delivery_key text NOT NULL,
    endpoint text NOT NULL,
    scheme text NOT NULL,
    merchant text NOT NULL,
    event_type text NOT NULL,
    event_id text NOT NULL,
    kind text NOT NULL,
    charge_ref text,
    event jsonb NOT NULL,
    body bytea,
    headers jsonb NOT NULL DEFAULT '{}'::jsonb,
    status text NOT NULL DEFAULT 'pending'::text,
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
    last_error text,
    received_at timestamp with time zone NOT NULL DEFAULT now(),
    processed_at timestamp with time zone,
    body_id bigint,
    body_archive bigint
);

CREATE TABLE inbox_bodies (
    id bigint NOT NULL DEFAULT nextval('inbox_bodies_id_seq'::regclass),
    body bytea NOT NULL,
    headers jsonb NOT NULL DEFAULT '{}'::jsonb,
    received_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE month_snapshots (
    month date NOT NULL,
    currency character(3) NOT NULL,
    sales bigint NOT NULL,
    sales_count bigint NOT NULL,
    refunds bigint NOT NULL,
    refunds_count bigint NOT NULL,
    commission bigint NOT NULL,
    psp_fees bigint NOT NULL,
    other bigint NOT NULL,
    lines integer NOT NULL,
    created_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    interest bigint NOT NULL DEFAULT 0,
    fines bigint NOT NULL DEFAULT 0,
    rebates bigint NOT NULL DEFAULT 0,
    discounts bigint NOT NULL DEFAULT 0,
    med_returns bigint
);

CREATE TABLE month_sum_lines (
    month date NOT NULL,
    account_id bigint NOT NULL,
    kind text NOT NULL,
    debits numeric NOT NULL,
    credits numeric NOT NULL,
    sets bigint NOT NULL
);

CREATE TABLE month_sums (
    month date NOT NULL,
    snapshot pg_snapshot NOT NULL,
    computed_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE outbox (
    id bigint NOT NULL DEFAULT nextval('outbox_id_seq'::regclass),
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    topic text NOT NULL,
    charge_id text,
    payload jsonb NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE outbox_purged_through (
    one boolean NOT NULL DEFAULT true,
    xid xid8 NOT NULL,
    id bigint NOT NULL,
    created_through timestamp with time zone,
    purged_at timestamp with time zone
);

CREATE TABLE posting_set_keys (
    id bigint NOT NULL DEFAULT nextval('posting_sets_id_seq'::regclass),
    idempotency_key text NOT NULL,
    kind text NOT NULL,
    competence date NOT NULL,
    amount bigint NOT NULL,
    charge_id text,
    refund_id text,
    reverses bigint
);

CREATE TABLE posting_sets (
    id bigint NOT NULL DEFAULT nextval('posting_sets_id_seq'::regclass),
    kind text NOT NULL,
    idempotency_key text NOT NULL,
    amount bigint NOT NULL,
    currency character(3) NOT NULL,
    competence date NOT NULL,
    competence_month date NOT NULL DEFAULT (date_trunc('month'::text, (competence)::timestamp without time zone))::date,
    event_at timestamp with time zone NOT NULL,
    charge_id text,
    refund_id text,
    partner text,
    inbox_id bigint,
    description text NOT NULL DEFAULT ''::text,
    content_hash text NOT NULL,
    created_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    return_id text,
    refund_nature text,
    reverses bigint
) PARTITION BY RANGE (competence);

CREATE TABLE postings (
    id bigint NOT NULL DEFAULT nextval('postings_id_seq'::regclass),
    posting_set_id bigint NOT NULL,
    account_id bigint NOT NULL,
    currency character(3) NOT NULL,
    amount bigint NOT NULL,
    competence_month date NOT NULL
) PARTITION BY RANGE (competence_month);

CREATE TABLE reconciliation_files (
    run_id bigint NOT NULL,
    chunk integer NOT NULL,
    data bytea NOT NULL
);

CREATE TABLE reconciliation_lines (
    run_id bigint NOT NULL,
    line bigint NOT NULL,
    side text NOT NULL DEFAULT 'statement'::text,
    kind text NOT NULL,
    event_type text NOT NULL DEFAULT ''::text,
    event_id text NOT NULL DEFAULT ''::text,
    psp_id text NOT NULL DEFAULT ''::text,
    charge_ref text NOT NULL DEFAULT ''::text,
    refund_id text NOT NULL DEFAULT ''::text,
    amount bigint NOT NULL DEFAULT 0,
    fee bigint,
    at timestamp with time zone,
    detail text NOT NULL DEFAULT ''::text,
    outcome text,
    reason text,
    charge_id text,
    ledger_amount bigint,
    ledger_fee bigint,
    inbox_id bigint,
    divergence_id bigint,
    return_id text,
    refund_nature text,
    parts bigint[]
);

CREATE TABLE reconciliation_pages (
    run_id bigint NOT NULL,
    pass integer NOT NULL,
    page integer NOT NULL,
    total bigint NOT NULL,
    items integer NOT NULL,
    page_count integer NOT NULL,
    fetched_at timestamp with time zone NOT NULL DEFAULT now(),
    page_size integer NOT NULL,
    bytes integer NOT NULL,
    sha256 bytea NOT NULL
);

CREATE TABLE reconciliation_runs (
    id bigint NOT NULL DEFAULT nextval('reconciliation_runs_id_seq'::regclass),
    endpoint text NOT NULL,
    source text NOT NULL,
    window_from timestamp with time zone NOT NULL,
    window_to timestamp with time zone NOT NULL,
    final boolean NOT NULL,
    scheduled boolean NOT NULL DEFAULT false,
    status text NOT NULL DEFAULT 'running'::text,
    claimed_by text NOT NULL,
    lease_until timestamp with time zone NOT NULL,
    attempts integer NOT NULL DEFAULT 1,
    pages integer NOT NULL DEFAULT 0,
    lines bigint NOT NULL DEFAULT 0,
    matched bigint NOT NULL DEFAULT 0,
    booked bigint NOT NULL DEFAULT 0,
    divergences bigint NOT NULL DEFAULT 0,
    loaded boolean NOT NULL DEFAULT false,
    file_sha256 text,
    last_error text,
    started_at timestamp with time zone NOT NULL DEFAULT now(),
    finished_at timestamp with time zone,
    duration_ms bigint,
    sweep boolean NOT NULL DEFAULT false
);

CREATE TABLE refund_aliases (
    charge_id text NOT NULL,
    refund_id text NOT NULL,
    alias_id text NOT NULL,
    inbox_id bigint,
    created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now(),
    oldest_binary integer NOT NULL DEFAULT 0
);

CREATE TABLE trial_balance_snapshots (
    month date NOT NULL,
    account_id bigint NOT NULL,
    opening bigint NOT NULL,
    debits bigint NOT NULL,
    credits bigint NOT NULL,
    closing bigint NOT NULL
);

CREATE TABLE verify_month_seals (
    month date NOT NULL,
    sets bigint NOT NULL,
    postings bigint NOT NULL,
    digest text NOT NULL,
    run_id bigint NOT NULL,
    sealed_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE verify_runs (
    id bigint NOT NULL DEFAULT nextval('verify_runs_id_seq'::regclass),
    mode text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL DEFAULT now(),
    snapshot pg_snapshot NOT NULL,
    last_closed date,
    from_month date,
    sets_checked bigint NOT NULL,
    new_sets bigint NOT NULL,
    months_sealed integer NOT NULL,
    breaches bigint NOT NULL
);

CREATE TABLE webhook_attempts (
    id bigint NOT NULL DEFAULT nextval('webhook_attempts_id_seq'::regclass),
    endpoint_id bigint NOT NULL,
    event_id bigint NOT NULL,
    topic text NOT NULL,
    attempt integer NOT NULL,
    replay boolean NOT NULL,
    status integer,
    error text,
    latency_ms integer NOT NULL,
    response text NOT NULL DEFAULT ''::text,
    next_at timestamp with time zone,
    at timestamp with time zone NOT NULL
);

CREATE TABLE webhook_endpoints (
    id bigint NOT NULL DEFAULT nextval('webhook_endpoints_id_seq'::regclass),
    url text NOT NULL,
    description text NOT NULL DEFAULT ''::text,
    topics text[] NOT NULL,
    enabled boolean NOT NULL DEFAULT true,
    disabled_reason text,
    disabled_at timestamp with time zone,
    secret bytea NOT NULL,
    previous_secret bytea,
    previous_until timestamp with time zone,
    after_xid xid8 NOT NULL,
    after_id bigint NOT NULL,
    attempt integer NOT NULL DEFAULT 0,
    head_event_id bigint,
    next_at timestamp with time zone NOT NULL DEFAULT now(),
    failing_since timestamp with time zone,
    lease_token text,
    lease_until timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE webhook_replays (
    endpoint_id bigint NOT NULL,
    event_id bigint NOT NULL,
    event_xid xid8 NOT NULL,
    asked_at timestamp with time zone NOT NULL DEFAULT now()
);

-- Constraints

ALTER TABLE access_grants ADD CONSTRAINT access_grants_charge_id_fkey FOREIGN KEY (charge_id) REFERENCES charges(id);
ALTER TABLE access_grants ADD CONSTRAINT access_grants_pkey PRIMARY KEY (charge_id);
ALTER TABLE accounts ADD CONSTRAINT accounts_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES accounts(id);
ALTER TABLE accounts ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);
ALTER TABLE accounts ADD CONSTRAINT ck_accounts_code CHECK (((code ~ '^[a-z][a-z0-9-]*(:[a-z0-9][a-z0-9_.-]*)*$'::text) AND (length(code) <= 200)));
ALTER TABLE accounts ADD CONSTRAINT ck_accounts_currency CHECK ((currency ~ '^[A-Z]{3}$'::text));
ALTER TABLE accounts ADD CONSTRAINT ck_accounts_normal_side CHECK ((normal_side = ANY (ARRAY['debit'::text, 'credit'::text])));
ALTER TABLE accounts ADD CONSTRAINT ck_accounts_type CHECK ((type = ANY (ARRAY['asset'::text, 'liability'::text, 'equity'::text, 'income'::text, 'expense'::text])));
ALTER TABLE accounts ADD CONSTRAINT uq_accounts_code UNIQUE (code);
ALTER TABLE accounts ADD CONSTRAINT uq_accounts_id_currency UNIQUE (id, currency);
ALTER TABLE adjustments ADD CONSTRAINT adjustments_pkey PRIMARY KEY (id);
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_adjustment CHECK (((kind <> 'adjustment'::text) OR ((idempotency_key IS NOT NULL) AND (competence IS NOT NULL) AND (reverses IS NULL))));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_amount CHECK (((amount > 0) AND (amount <= '1000000000000000'::bigint)));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_booked CHECK (((status = 'booked'::text) = (posting_set_id IS NOT NULL)));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_decided CHECK (((status = 'proposed'::text) = (decided_at IS NULL)));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_decider CHECK (((status <> ALL (ARRAY['booked'::text, 'rejected'::text])) OR (decided_by IS NOT NULL)));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_expiry CHECK ((expires_at > proposed_at));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_four_eyes CHECK (((status <> 'booked'::text) OR (NOT four_eyes) OR (decided_by <> proposed_by)));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_key CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 200)));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_kind CHECK ((kind = ANY (ARRAY['adjustment'::text, 'reversal'::text])));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_legs CHECK (((jsonb_typeof(legs) = 'array'::text) AND ((jsonb_array_length(legs) >= 2) AND (jsonb_array_length(legs) <= 100))));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_names CHECK ((((length(proposed_by) >= 1) AND (length(proposed_by) <= 100)) AND ((length(decided_by) >= 1) AND (length(decided_by) <= 100))));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_note CHECK ((length(decision_note) <= 1000));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_reason CHECK (((length(reason) >= 1) AND (length(reason) <= 1000)));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_reversal CHECK (((kind <> 'reversal'::text) OR ((reverses IS NOT NULL) AND (idempotency_key IS NULL))));
ALTER TABLE adjustments ADD CONSTRAINT ck_adjustments_status CHECK ((status = ANY (ARRAY['proposed'::text, 'booked'::text, 'rejected'::text, 'expired'::text])));
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);
ALTER TABLE api_tokens ADD CONSTRAINT ck_api_tokens_hash CHECK ((octet_length(token_hash) = 32));
ALTER TABLE api_tokens ADD CONSTRAINT ck_api_tokens_name CHECK ((((length(name) >= 1) AND (length(name) <= 100)) AND (name !~ '[[:cntrl:]]'::text)));
ALTER TABLE api_tokens ADD CONSTRAINT ck_api_tokens_revoked CHECK (((revoked_at IS NULL) OR (revoked_at >= created_at)));
ALTER TABLE api_tokens ADD CONSTRAINT ck_api_tokens_scopes CHECK (((array_ndims(scopes) = 1) AND ((cardinality(scopes) >= 1) AND (cardinality(scopes) <= 3)) AND (scopes <@ ARRAY['read'::text, 'write'::text, 'admin'::text])));
ALTER TABLE api_tokens ADD CONSTRAINT uq_api_tokens_hash UNIQUE (token_hash);
ALTER TABLE archives ADD CONSTRAINT archives_pkey PRIMARY KEY (id);
ALTER TABLE archives ADD CONSTRAINT ck_archives_figures CHECK (((rows > 0) AND (bytes > 0)));
ALTER TABLE archives ADD CONSTRAINT ck_archives_kind CHECK ((kind = ANY (ARRAY['inbox_bodies'::text, 'outbox'::text, 'statements'::text, 'reconciliation_lines'::text, 'webhook_attempts'::text])));
ALTER TABLE archives ADD CONSTRAINT ck_archives_month CHECK ((month = (date_trunc('month'::text, (month)::timestamp with time zone))::date));
ALTER TABLE archives ADD CONSTRAINT ck_archives_sha256 CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text));
ALTER TABLE archives ADD CONSTRAINT uq_archives_file_name UNIQUE (file_name);
ALTER TABLE charges ADD CONSTRAINT charges_pkey PRIMARY KEY (id);
ALTER TABLE charges ADD CONSTRAINT ck_charges_amount CHECK ((amount > 0));
ALTER TABLE charges ADD CONSTRAINT ck_charges_amount_ceiling CHECK ((amount <= '1000000000000000'::bigint));
ALTER TABLE charges ADD CONSTRAINT ck_charges_commission_bp CHECK (((commission_bp >= 0) AND (commission_bp <= 10000)));
ALTER TABLE charges ADD CONSTRAINT ck_charges_id CHECK ((id ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'::text));
ALTER TABLE charges ADD CONSTRAINT ck_charges_merchant CHECK ((merchant <> ''::text));
ALTER TABLE charges ADD CONSTRAINT ck_charges_partner CHECK (((partner IS NOT NULL) OR (commission_bp = 0)));
ALTER TABLE charges ADD CONSTRAINT ck_charges_refunded CHECK (((refunded_amount >= 0) AND (refunded_amount <= COALESCE(paid_amount, (0)::bigint))));
ALTER TABLE charges ADD CONSTRAINT ck_charges_state CHECK ((state = ANY (ARRAY['pending'::text, 'paid'::text, 'partially_refunded'::text, 'refunded'::text, 'failed'::text])));
ALTER TABLE closed_periods ADD CONSTRAINT ck_closed_periods_first_day CHECK ((EXTRACT(day FROM month) = (1)::numeric));
ALTER TABLE closed_periods ADD CONSTRAINT closed_periods_pkey PRIMARY KEY (month);
ALTER TABLE console_sessions ADD CONSTRAINT ck_console_sessions_expiry CHECK ((expires_at > created_at));
ALTER TABLE console_sessions ADD CONSTRAINT ck_console_sessions_hash CHECK ((octet_length(session_hash) = 32));
ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (session_hash);
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_detail_args CHECK ((((detail_code IS NULL) = (detail_args IS NULL)) AND ((detail_args IS NULL) OR (jsonb_typeof(detail_args) = 'array'::text))));
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_reason CHECK ((reason = ANY (ARRAY['unknown_charge'::text, 'amount_mismatch'::text, 'currency_mismatch'::text, 'refund_exceeds_paid'::text, 'refund_amount_missing'::text, 'malformed'::text, 'disputed'::text, 'second_payment'::text, 'processing_failed'::text, 'refund_of_other_payment'::text, 'refund_amount_changed'::text, 'refund_without_payment'::text, 'merchant_mismatch'::text, 'fee_mismatch'::text, 'refund_amount_mismatch'::text, 'refund_not_settled'::text, 'phantom'::text, 'invalid_line'::text, 'divergent_in_inbox'::text, 'refund_settlement_unknown'::text, 'unknown_refund_status'::text, 'unknown_refund_nature'::text])));
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_resolution CHECK ((resolution = ANY (ARRAY['customer_credit'::text, 'revenue'::text, 'credit_refund'::text, 'loss'::text, 'refund_difference'::text, 'fee_difference'::text])));
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_resolution_booked CHECK ((((resolution IS NULL) = (resolution_set_id IS NULL)) AND ((resolution_set_id IS NULL) OR (status = 'resolved'::text))));
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_resolution_credit CHECK (((resolution_credit_id IS NULL) OR (resolution = 'credit_refund'::text)));
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_source CHECK ((source = ANY (ARRAY['webhook'::text, 'reconciliation'::text])));
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_source_fields CHECK (
CASE source
    WHEN 'reconciliation'::text THEN ((reconciliation_key IS NOT NULL) AND (endpoint IS NOT NULL) AND (inbox_id IS NULL))
    ELSE (reconciliation_key IS NULL)
END);
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_status CHECK ((status = ANY (ARRAY['open'::text, 'resolved'::text])));
ALTER TABLE divergences ADD CONSTRAINT divergences_inbox_id_fkey FOREIGN KEY (inbox_id) REFERENCES inbox(id);
ALTER TABLE divergences ADD CONSTRAINT divergences_pkey PRIMARY KEY (id);
ALTER TABLE divergences ADD CONSTRAINT divergences_resolution_credit_id_fkey FOREIGN KEY (resolution_credit_id) REFERENCES divergences(id);
ALTER TABLE divergences ADD CONSTRAINT divergences_resolution_set_id_fkey FOREIGN KEY (resolution_set_id) REFERENCES posting_set_keys(id);
ALTER TABLE divergences ADD CONSTRAINT divergences_run_id_fkey FOREIGN KEY (run_id) REFERENCES reconciliation_runs(id) ON DELETE SET NULL;
ALTER TABLE divergences ADD CONSTRAINT uq_divergences_inbox UNIQUE (inbox_id);
ALTER TABLE divergences ADD CONSTRAINT uq_divergences_reconciliation_key UNIQUE (reconciliation_key);
ALTER TABLE divergences ADD CONSTRAINT uq_divergences_resolution_set UNIQUE (resolution_set_id);
ALTER TABLE export_runs ADD CONSTRAINT ck_export_runs_month CHECK ((EXTRACT(day FROM month) = (1)::numeric));
ALTER TABLE export_runs ADD CONSTRAINT ck_export_runs_status CHECK ((status = ANY (ARRAY['running'::text, 'waiting'::text, 'succeeded'::text, 'failed'::text])));
ALTER TABLE export_runs ADD CONSTRAINT export_runs_pkey PRIMARY KEY (id);
ALTER TABLE export_runs ADD CONSTRAINT uq_export_runs_slot UNIQUE (slot, kind, dialect);
ALTER TABLE inbox ADD CONSTRAINT ck_inbox_body CHECK (
CASE
    WHEN (body_archive IS NULL) THEN ((body IS NULL) <> (body_id IS NULL))
    ELSE ((body IS NULL) AND (body_id IS NULL))
END);
ALTER TABLE inbox ADD CONSTRAINT ck_inbox_kind CHECK ((kind = ANY (ARRAY['paid'::text, 'refunded'::text, 'failed'::text, 'ignored'::text, 'disputed'::text, 'malformed'::text, 'unbookable'::text])));
ALTER TABLE inbox ADD CONSTRAINT ck_inbox_status CHECK ((status = ANY (ARRAY['pending'::text, 'processed'::text, 'parked'::text, 'divergent'::text, 'ignored'::text])));
ALTER TABLE inbox ADD CONSTRAINT fk_inbox_body FOREIGN KEY (body_id) REFERENCES inbox_bodies(id);
ALTER TABLE inbox ADD CONSTRAINT fk_inbox_body_archive FOREIGN KEY (body_archive) REFERENCES archives(id);
ALTER TABLE inbox ADD CONSTRAINT inbox_pkey PRIMARY KEY (id);
ALTER TABLE inbox ADD CONSTRAINT uq_inbox_event UNIQUE (endpoint, event_type, event_id);
ALTER TABLE inbox_bodies ADD CONSTRAINT inbox_bodies_pkey PRIMARY KEY (id);
ALTER TABLE month_snapshots ADD CONSTRAINT ck_month_snapshots_counts CHECK (((sales_count >= 0) AND (refunds_count >= 0) AND (lines >= 0)));
ALTER TABLE month_snapshots ADD CONSTRAINT fk_month_snapshots_closed FOREIGN KEY (month) REFERENCES closed_periods(month);
ALTER TABLE month_snapshots ADD CONSTRAINT month_snapshots_pkey PRIMARY KEY (month);
ALTER TABLE month_sum_lines ADD CONSTRAINT ck_month_sum_lines_positive CHECK (((debits >= (0)::numeric) AND (credits >= (0)::numeric) AND (sets >= 0)));
ALTER TABLE month_sum_lines ADD CONSTRAINT month_sum_lines_month_fkey FOREIGN KEY (month) REFERENCES month_sums(month) ON DELETE CASCADE;
ALTER TABLE month_sum_lines ADD CONSTRAINT month_sum_lines_pkey PRIMARY KEY (month, account_id, kind);
ALTER TABLE month_sums ADD CONSTRAINT ck_month_sums_first_day CHECK ((month = (date_trunc('month'::text, (month)::timestamp with time zone))::date));
ALTER TABLE month_sums ADD CONSTRAINT month_sums_pkey PRIMARY KEY (month);
ALTER TABLE outbox ADD CONSTRAINT ck_outbox_topic CHECK ((topic = ANY (ARRAY['charge.paid'::text, 'access.granted'::text, 'charge.refunded'::text, 'charge.failed'::text, 'divergence.opened'::text, 'adjustment.proposed'::text, 'adjustment.booked'::text, 'adjustment.rejected'::text, 'adjustment.expired'::text, 'webhook_endpoint.disabled'::text])));
ALTER TABLE outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);
ALTER TABLE outbox_purged_through ADD CONSTRAINT ck_outbox_purged_through_one CHECK (one);
ALTER TABLE outbox_purged_through ADD CONSTRAINT outbox_purged_through_pkey PRIMARY KEY (one);
ALTER TABLE posting_set_keys ADD CONSTRAINT posting_set_keys_pkey PRIMARY KEY (id);
ALTER TABLE posting_set_keys ADD CONSTRAINT uq_posting_sets_idempotency_key UNIQUE (idempotency_key);
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_amount CHECK ((amount > 0));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_amount_ceiling CHECK ((amount <= '1000000000000000'::bigint));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_charge CHECK (((kind <> ALL (ARRAY['sale'::text, 'commission'::text, 'refund'::text, 'commission_reversal'::text])) OR (charge_id IS NOT NULL)));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_key CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 300)));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_kind CHECK ((kind = ANY (ARRAY['sale'::text, 'commission'::text, 'refund'::text, 'commission_reversal'::text, 'payout'::text, 'adjustment'::text])));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_partner CHECK (((kind <> ALL (ARRAY['commission'::text, 'commission_reversal'::text, 'payout'::text])) OR (partner IS NOT NULL)));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_refund CHECK (((kind <> ALL (ARRAY['refund'::text, 'commission_reversal'::text])) OR (refund_id IS NOT NULL)));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_refund_details CHECK (((kind = 'refund'::text) OR ((return_id IS NULL) AND (refund_nature IS NULL))));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_refund_nature CHECK ((refund_nature ~ '^[A-Z][A-Z0-9_]{0,34}$'::text));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_return_id CHECK (((length(return_id) >= 1) AND (length(return_id) <= 64)));
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_reverses CHECK (((reverses IS NULL) OR ((kind = 'adjustment'::text) AND (reverses <> id))));
ALTER TABLE postings ADD CONSTRAINT ck_postings_amount_ceiling CHECK (((amount <= '1000000000000000'::bigint) AND (amount >= '-1000000000000000'::bigint)));
ALTER TABLE postings ADD CONSTRAINT ck_postings_amount_nonzero CHECK ((amount <> 0));
ALTER TABLE reconciliation_files ADD CONSTRAINT ck_reconciliation_files_chunk CHECK (((chunk >= 0) AND ((octet_length(data) >= 1) AND (octet_length(data) <= 1048576))));
ALTER TABLE reconciliation_files ADD CONSTRAINT reconciliation_files_pkey PRIMARY KEY (run_id, chunk);
ALTER TABLE reconciliation_files ADD CONSTRAINT reconciliation_files_run_id_fkey FOREIGN KEY (run_id) REFERENCES reconciliation_runs(id) ON DELETE CASCADE;
ALTER TABLE reconciliation_lines ADD CONSTRAINT ck_reconciliation_lines_kind CHECK ((kind = ANY (ARRAY['paid'::text, 'refunded'::text, 'refund_open'::text, 'invalid'::text])));
ALTER TABLE reconciliation_lines ADD CONSTRAINT ck_reconciliation_lines_outcome CHECK ((outcome = ANY (ARRAY['matched'::text, 'booked'::text, 'divergence'::text])));
ALTER TABLE reconciliation_lines ADD CONSTRAINT ck_reconciliation_lines_parts CHECK (((parts IS NULL) OR ((cardinality(parts) = 7) AND (0 <= ALL (parts)))));
ALTER TABLE reconciliation_lines ADD CONSTRAINT ck_reconciliation_lines_side CHECK ((side = ANY (ARRAY['statement'::text, 'ledger'::text])));
ALTER TABLE reconciliation_lines ADD CONSTRAINT reconciliation_lines_pkey PRIMARY KEY (run_id, line);
ALTER TABLE reconciliation_pages ADD CONSTRAINT ck_reconciliation_pages_figures CHECK (((page_size >= 0) AND (bytes >= 0) AND (octet_length(sha256) = 32)));
ALTER TABLE reconciliation_pages ADD CONSTRAINT reconciliation_pages_pkey PRIMARY KEY (run_id, pass, page);
ALTER TABLE reconciliation_pages ADD CONSTRAINT reconciliation_pages_run_id_fkey FOREIGN KEY (run_id) REFERENCES reconciliation_runs(id) ON DELETE CASCADE;
ALTER TABLE reconciliation_runs ADD CONSTRAINT ck_reconciliation_runs_endpoint CHECK (((length(endpoint) >= 1) AND (length(endpoint) <= 63)));
ALTER TABLE reconciliation_runs ADD CONSTRAINT ck_reconciliation_runs_source CHECK ((source = ANY (ARRAY['bcb-pix'::text, 'csv'::text])));
ALTER TABLE reconciliation_runs ADD CONSTRAINT ck_reconciliation_runs_status CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text])));
ALTER TABLE reconciliation_runs ADD CONSTRAINT ck_reconciliation_runs_sweep CHECK (((NOT sweep) OR (scheduled AND (NOT final) AND (source = 'bcb-pix'::text))));
ALTER TABLE reconciliation_runs ADD CONSTRAINT ck_reconciliation_runs_window CHECK ((window_from < window_to));
ALTER TABLE reconciliation_runs ADD CONSTRAINT reconciliation_runs_pkey PRIMARY KEY (id);
ALTER TABLE refund_aliases ADD CONSTRAINT ck_refund_aliases_other CHECK ((alias_id <> refund_id));
ALTER TABLE refund_aliases ADD CONSTRAINT refund_aliases_pkey PRIMARY KEY (charge_id, alias_id);
ALTER TABLE refund_aliases ADD CONSTRAINT uq_refund_aliases_refund UNIQUE (charge_id, refund_id);
ALTER TABLE schema_migrations ADD CONSTRAINT ck_schema_migrations_oldest_binary CHECK (((oldest_binary >= 0) AND (oldest_binary <= version)));
ALTER TABLE schema_migrations ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);
ALTER TABLE trial_balance_snapshots ADD CONSTRAINT ck_trial_balance_snapshots_closing CHECK ((closing = ((opening + debits) - credits)));
ALTER TABLE trial_balance_snapshots ADD CONSTRAINT ck_trial_balance_snapshots_sides CHECK (((debits >= 0) AND (credits >= 0)));
ALTER TABLE trial_balance_snapshots ADD CONSTRAINT fk_trial_balance_snapshots_account FOREIGN KEY (account_id) REFERENCES accounts(id);
ALTER TABLE trial_balance_snapshots ADD CONSTRAINT fk_trial_balance_snapshots_month FOREIGN KEY (month) REFERENCES month_snapshots(month);
ALTER TABLE trial_balance_snapshots ADD CONSTRAINT pk_trial_balance_snapshots PRIMARY KEY (month, account_id);
ALTER TABLE verify_month_seals ADD CONSTRAINT ck_verify_month_seals_first_day CHECK ((month = (date_trunc('month'::text, (month)::timestamp with time zone))::date));
ALTER TABLE verify_month_seals ADD CONSTRAINT verify_month_seals_pkey PRIMARY KEY (month);
ALTER TABLE verify_month_seals ADD CONSTRAINT verify_month_seals_run_id_fkey FOREIGN KEY (run_id) REFERENCES verify_runs(id);
ALTER TABLE verify_runs ADD CONSTRAINT ck_verify_runs_counts CHECK (((sets_checked >= 0) AND (new_sets >= 0) AND (months_sealed >= 0) AND (breaches >= 0)));
ALTER TABLE verify_runs ADD CONSTRAINT ck_verify_runs_mode CHECK ((mode = ANY (ARRAY['full'::text, 'incremental'::text])));
ALTER TABLE verify_runs ADD CONSTRAINT verify_runs_pkey PRIMARY KEY (id);
ALTER TABLE webhook_attempts ADD CONSTRAINT ck_webhook_attempts_outcome CHECK (((status IS NULL) <> (error IS NULL)));
ALTER TABLE webhook_attempts ADD CONSTRAINT ck_webhook_attempts_response CHECK (((length(response) <= 4096) AND (length(error) <= 1000)));
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id) ON DELETE CASCADE;
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (id);
ALTER TABLE webhook_endpoints ADD CONSTRAINT ck_webhook_endpoints_attempt CHECK ((attempt >= 0));
ALTER TABLE webhook_endpoints ADD CONSTRAINT ck_webhook_endpoints_description CHECK ((length(description) <= 500));
ALTER TABLE webhook_endpoints ADD CONSTRAINT ck_webhook_endpoints_disabled CHECK (((enabled = (disabled_at IS NULL)) AND (enabled = (disabled_reason IS NULL))));
ALTER TABLE webhook_endpoints ADD CONSTRAINT ck_webhook_endpoints_disabled_reason CHECK ((disabled_reason = ANY (ARRAY['operator'::text, 'failing'::text])));
ALTER TABLE webhook_endpoints ADD CONSTRAINT ck_webhook_endpoints_previous CHECK (((previous_secret IS NULL) = (previous_until IS NULL)));
ALTER TABLE webhook_endpoints ADD CONSTRAINT ck_webhook_endpoints_topics CHECK ((cardinality(topics) <= 50));
ALTER TABLE webhook_endpoints ADD CONSTRAINT ck_webhook_endpoints_url CHECK (((length(url) >= 1) AND (length(url) <= 2000)));
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);
ALTER TABLE webhook_replays ADD CONSTRAINT webhook_replays_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id) ON DELETE CASCADE;
ALTER TABLE webhook_replays ADD CONSTRAINT webhook_replays_pkey PRIMARY KEY (endpoint_id, event_xid, event_id);

-- Indexes that back no constraint

CREATE INDEX ix_adjustments_due ON public.adjustments USING btree (expires_at) WHERE (status = 'proposed'::text);
CREATE INDEX ix_adjustments_status_id ON public.adjustments USING btree (status, id);
CREATE UNIQUE INDEX uq_adjustments_key ON public.adjustments USING btree (idempotency_key) WHERE (kind = 'adjustment'::text);
CREATE UNIQUE INDEX uq_adjustments_posting_set ON public.adjustments USING btree (posting_set_id) WHERE (posting_set_id IS NOT NULL);
CREATE UNIQUE INDEX uq_adjustments_reversal ON public.adjustments USING btree (reverses) WHERE ((kind = 'reversal'::text) AND (status = ANY (ARRAY['proposed'::text, 'booked'::text])));
CREATE INDEX ix_archives_kind_month ON public.archives USING btree (kind, month, id);
CREATE INDEX ix_charges_amount ON public.charges USING btree (amount);
CREATE INDEX ix_charges_created ON public.charges USING btree (created_at, id);
CREATE INDEX ix_charges_merchant_created ON public.charges USING btree (merchant, created_at, id) WHERE (merchant IS NOT NULL);
CREATE INDEX ix_charges_paid_at ON public.charges USING btree (paid_at, id) WHERE (paid_at IS NOT NULL);
CREATE INDEX ix_charges_paid_ref ON public.charges USING btree (paid_ref) WHERE (paid_ref IS NOT NULL);
CREATE INDEX ix_charges_partner_created ON public.charges USING btree (partner, created_at, id) WHERE (partner IS NOT NULL);
CREATE INDEX ix_charges_state_created ON public.charges USING btree (state, created_at, id);
CREATE UNIQUE INDEX uq_charges_psp_ref ON public.charges USING btree (psp_ref) WHERE (psp_ref IS NOT NULL);
CREATE INDEX ix_console_sessions_expires ON public.console_sessions USING btree (expires_at);
CREATE INDEX ix_console_sessions_token ON public.console_sessions USING btree (token_id);
CREATE INDEX ix_divergences_charge ON public.divergences USING btree (charge_id, id) WHERE (charge_id IS NOT NULL);
CREATE INDEX ix_divergences_open ON public.divergences USING btree (created_at) WHERE (status = 'open'::text);
CREATE INDEX ix_divergences_resolution_credit ON public.divergences USING btree (resolution_credit_id) WHERE (resolution_credit_id IS NOT NULL);
CREATE INDEX ix_divergences_status_id ON public.divergences USING btree (status, id);
CREATE INDEX ix_export_runs_retry ON public.export_runs USING btree (slot) WHERE (status <> 'succeeded'::text);
CREATE INDEX ix_inbox_archivable ON public.inbox USING btree (processed_at, id) WHERE ((body_archive IS NULL) AND (status = ANY (ARRAY['processed'::text, 'ignored'::text])));
CREATE INDEX ix_inbox_body_id ON public.inbox USING btree (body_id) WHERE (body_id IS NOT NULL);
CREATE INDEX ix_inbox_charge_ref ON public.inbox USING btree (charge_ref) WHERE (charge_ref IS NOT NULL);
CREATE INDEX ix_inbox_due ON public.inbox USING btree (next_attempt_at) WHERE (status = 'pending'::text);
CREATE INDEX ix_inbox_event_id ON public.inbox USING btree (event_id);
CREATE INDEX ix_inbox_parked ON public.inbox USING btree (charge_ref) WHERE (status = 'parked'::text);
CREATE INDEX ix_outbox_charge ON public.outbox USING btree (charge_id, id) WHERE (charge_id IS NOT NULL);
CREATE INDEX ix_outbox_cursor ON public.outbox USING btree (xid, id);
CREATE UNIQUE INDEX uq_commission_per_charge ON public.posting_set_keys USING btree (charge_id) WHERE (kind = 'commission'::text);
CREATE UNIQUE INDEX uq_posting_sets_reverses ON public.posting_set_keys USING btree (reverses) WHERE (reverses IS NOT NULL);
CREATE UNIQUE INDEX uq_refund_per_psp_refund ON public.posting_set_keys USING btree (charge_id, refund_id) WHERE (kind = 'refund'::text);
CREATE UNIQUE INDEX uq_reversal_per_psp_refund ON public.posting_set_keys USING btree (charge_id, refund_id) WHERE (kind = 'commission_reversal'::text);
CREATE UNIQUE INDEX uq_sale_per_charge ON public.posting_set_keys USING btree (charge_id) WHERE (kind = 'sale'::text);
CREATE INDEX ix_posting_sets_amount_id ON ONLY public.posting_sets USING btree (amount, id);
CREATE INDEX ix_posting_sets_charge ON ONLY public.posting_sets USING btree (charge_id) WHERE (charge_id IS NOT NULL);
CREATE INDEX ix_posting_sets_competence_id ON ONLY public.posting_sets USING btree (competence, id);
CREATE INDEX ix_posting_sets_competence_month ON ONLY public.posting_sets USING btree (competence_month, id);
CREATE INDEX ix_posting_sets_event_at ON ONLY public.posting_sets USING btree (event_at) WHERE (kind = ANY (ARRAY['sale'::text, 'refund'::text]));
CREATE INDEX ix_posting_sets_event_day ON ONLY public.posting_sets USING btree ((((event_at AT TIME ZONE 'UTC'::text))::date), id) INCLUDE (event_at);
CREATE INDEX ix_posting_sets_event_id ON ONLY public.posting_sets USING btree (event_at, id);
CREATE INDEX ix_posting_sets_event_month ON ONLY public.posting_sets USING btree (date_trunc('month'::text, (event_at AT TIME ZONE 'UTC'::text)), id) INCLUDE (event_at);
CREATE INDEX ix_posting_sets_kind_id ON ONLY public.posting_sets USING btree (kind, id);
CREATE INDEX ix_posting_sets_month_xid ON ONLY public.posting_sets USING btree (competence_month, created_xid);
CREATE INDEX ix_posting_sets_partner_id ON ONLY public.posting_sets USING btree (partner, id) WHERE (partner IS NOT NULL);
CREATE INDEX ix_posting_sets_partner_payouts ON ONLY public.posting_sets USING btree (partner, id) WHERE (kind = 'payout'::text);
CREATE INDEX ix_postings_account_month ON ONLY public.postings USING btree (account_id, competence_month) INCLUDE (amount);
CREATE INDEX ix_postings_account_set ON ONLY public.postings USING btree (account_id, posting_set_id);
CREATE INDEX ix_postings_set ON ONLY public.postings USING btree (posting_set_id);
CREATE INDEX ix_reconciliation_lines_charge ON public.reconciliation_lines USING btree (charge_id) WHERE (charge_id IS NOT NULL);
CREATE INDEX ix_reconciliation_lines_undecided ON public.reconciliation_lines USING btree (run_id, line) WHERE (outcome IS NULL);
CREATE INDEX ix_reconciliation_pages_totals ON public.reconciliation_pages USING btree (run_id, pass, total, page_count);
CREATE INDEX ix_reconciliation_runs_endpoint ON public.reconciliation_runs USING btree (endpoint, id);
CREATE INDEX ix_reconciliation_runs_unfinished ON public.reconciliation_runs USING btree (lease_until) WHERE (status = 'running'::text);
CREATE UNIQUE INDEX uq_reconciliation_runs_sweep ON public.reconciliation_runs USING btree (endpoint, window_to) WHERE sweep;
CREATE UNIQUE INDEX uq_reconciliation_runs_window ON public.reconciliation_runs USING btree (endpoint, window_from, window_to, final) WHERE (scheduled AND (NOT sweep));
CREATE INDEX ix_verify_runs_clean ON public.verify_runs USING btree (id DESC) WHERE (breaches = 0);
CREATE INDEX ix_webhook_attempts_at ON public.webhook_attempts USING btree (at);
CREATE INDEX ix_webhook_attempts_endpoint ON public.webhook_attempts USING btree (endpoint_id, id);
CREATE INDEX ix_webhook_endpoints_due ON public.webhook_endpoints USING btree (next_at) WHERE enabled;

-- Functions

CREATE OR REPLACE FUNCTION public.api_tokens_revoke_only()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.name, NEW.token_hash, NEW.scopes, NEW.created_at)
               IS NOT DISTINCT FROM (OLD.id, OLD.name, OLD.token_hash, OLD.scopes, OLD.created_at) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'api_tokens: % refused: a token can only be revoked, once', TG_OP
        USING ERRCODE = 'restrict_violation', CONSTRAINT = TG_NAME;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_check_new_sets()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    last_closed date;
    refused     date;
BEGIN
    SELECT max(c.month) INTO last_closed FROM closed_periods c;
    SELECT min(n.competence_month) INTO refused FROM new_sets n WHERE n.competence_month <= last_closed;
    IF refused IS NOT NULL THEN
        RAISE EXCEPTION 'competence month % is closed: every month up to %, the last closed, is', to_char(refused::timestamp, 'YYYY-MM'),
            to_char(last_closed::timestamp, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    IF EXISTS (SELECT 1 FROM new_sets n WHERE n.created_xid <> pg_current_xact_id()) THEN
        RAISE EXCEPTION 'a posting set''s created_xid is the transaction that writes it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_written_open';
    END IF;
    RETURN NULL;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_check_posting_set()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    legs         bigint;
    debits       numeric;
    total        numeric;
    currencies   bigint;
    unbalanced   text;
BEGIN
    SELECT count(*), coalesce(sum(amount::numeric) FILTER (WHERE amount > 0::bigint AND currency = NEW.currency), 0::numeric),
           coalesce(sum(amount::numeric), 0::numeric), count(DISTINCT currency)
        INTO legs, debits, total, currencies FROM postings WHERE posting_set_id = NEW.id AND competence_month = NEW.competence_month;
    IF legs < 2::bigint THEN
        RAISE EXCEPTION 'posting set % has % posting(s); at least 2 are required', NEW.id, legs
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    IF currencies > 1::bigint OR total <> 0::numeric THEN
        SELECT string_agg(currency::text || ' ' || s::text, ', ') INTO unbalanced FROM (
            SELECT currency, sum(amount::numeric) AS s FROM postings
            WHERE posting_set_id = NEW.id AND competence_month = NEW.competence_month GROUP BY currency HAVING sum(amount::numeric) <> 0::numeric
        ) u;
        IF unbalanced IS NOT NULL THEN
            RAISE EXCEPTION 'posting set % does not balance: %', NEW.id, unbalanced
                USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
        END IF;
    END IF;
    IF debits <> NEW.amount::numeric THEN
        RAISE EXCEPTION 'posting set % states amount % but debits %', NEW.id, NEW.amount, debits
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    RETURN NULL;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_check_refunds_within_sale()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    sale_amount  numeric;
    refunded     numeric;
BEGIN
    SELECT amount::numeric INTO sale_amount FROM posting_set_keys
        WHERE kind = 'sale' AND charge_id = NEW.charge_id FOR NO KEY UPDATE;
    -- A new statement, so a new snapshot: it sees the refunds committed by
    -- whoever held the lock before us.
    SELECT coalesce(sum(amount::numeric), 0::numeric) INTO refunded FROM posting_set_keys
        WHERE kind = 'refund' AND charge_id = NEW.charge_id;
    IF sale_amount IS NULL OR refunded > sale_amount THEN
        RAISE EXCEPTION 'refunds of charge % total % above its sale %', NEW.charge_id, refunded, coalesce(sale_amount, 0::numeric)
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_refunds_within_sale';
    END IF;
    RETURN NULL;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_close_waits_for_postings()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    last_closed date;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'months are closed at READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_closed_periods_close_lock';
    END IF;
    LOCK TABLE month_close_lock IN EXCLUSIVE MODE;
    -- Read after the lock: every close before this one has committed.
    SELECT max(month) INTO last_closed FROM closed_periods;
    IF last_closed IS NOT NULL AND NEW.month <> (last_closed + interval '1 month')::date THEN
        RAISE EXCEPTION 'month % cannot be closed: the next month to close is %', to_char(NEW.month, 'YYYY-MM'),
            to_char(last_closed + interval '1 month', 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_closed_periods_close_lock';
    END IF;
    NEW.closed_xid := pg_current_xact_id();
    NEW.closed_at := now();
    RETURN NEW;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_ensure_month_partitions(through date)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
 SET lock_timeout TO '200ms'
AS $function$
DECLARE
    ns       text;
    past_end date;
    m        date;
    parent   text;
    col      text;
    part     text;
    bound    text;
    made     integer := 0;
    held     boolean;
    def      text;
    trg      record;
    idx      record;
    patience interval;
    parents  text[] := '{}';
    parts    text[] := '{}';
    bounds   text[] := '{}';
    months   date[] := '{}';
    k        integer;
BEGIN
    IF through IS NULL OR through > (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '36 months')::date THEN
        RAISE EXCEPTION 'partitions are made at most 36 months ahead, not through %', through
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT quote_ident(n.nspname) INTO ns FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.oid = 'posting_sets'::regclass AND c.relkind = 'p';
    IF ns IS NULL THEN
        RAISE EXCEPTION 'posting_sets is not partitioned' USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- Nothing to make: said from the catalog, without a lock on any table
    -- (pg_get_expr given no relation does not open it).
    SELECT substring(pg_get_expr(c.relpartbound, 0) FROM 'TO \(''([0-9-]+)''\)')::date INTO past_end
        FROM pg_class c WHERE c.oid = 'posting_sets_past'::regclass;
    IF to_regclass(ns || '.posting_sets_default') IS NOT NULL AND to_regclass(ns || '.postings_default') IS NOT NULL
        AND (through < past_end OR NOT EXISTS (
            SELECT 1 FROM unnest(ARRAY['posting_sets', 'postings']) AS p (tbl)
            WHERE NOT EXISTS (
                SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = (ns || '.' || p.tbl)::regclass
                    AND CASE WHEN c.relname ~ ('^' || p.tbl || '_[0-9]{4}_[0-9]{2}$')
                        THEN to_date(right(c.relname, 7), 'YYYY_MM') >= date_trunc('month', through)::date END))) THEN
        RETURN 0;
    END IF;
    -- Every wait below ends within lock_timeout, kept under deadlock_timeout.
    patience := current_setting('deadlock_timeout')::interval / 2;
    IF patience < current_setting('lock_timeout')::interval THEN
        PERFORM set_config('lock_timeout', greatest(1, floor(extract(epoch FROM patience) * 1000))::text || 'ms', true);
    END IF;
    -- 1. Calls take turns on posting_sets' SHARE UPDATE EXCLUSIVE lock,
    -- which no INSERT or SELECT waits for, then look again at what
    -- exists, and make each missing table whole (columns, checks,
    -- statement triggers, indexes) while postings go on.
    LOCK TABLE posting_sets IN SHARE UPDATE EXCLUSIVE MODE;
    SELECT substring(pg_get_expr(c.relpartbound, 0) FROM 'TO \(''([0-9-]+)''\)')::date INTO past_end
        FROM pg_class c WHERE c.oid = 'posting_sets_past'::regclass;
    FOREACH parent IN ARRAY ARRAY['posting_sets', 'postings'] LOOP
        col := CASE parent WHEN 'posting_sets' THEN 'competence' ELSE 'competence_month' END;
        -- The DEFAULT partition last: every month attached after it reads
        -- it for rows of its own.
        FOR part, bound, m IN
            SELECT parent || '_' || to_char(d, 'YYYY_MM'), format('FOR VALUES FROM (%L) TO (%L)', d::date, (d + interval '1 month')::date), d::date
                FROM generate_series(past_end::timestamp, date_trunc('month', through::timestamp), interval '1 month') d
            UNION ALL SELECT parent || '_default', 'DEFAULT', NULL::date
        LOOP
            CONTINUE WHEN to_regclass(ns || '.' || quote_ident(part)) IS NOT NULL;
            IF m IS NOT NULL THEN
                held := false;
                IF to_regclass(ns || '.' || quote_ident(parent || '_default')) IS NOT NULL THEN
                    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I WHERE %I >= %L::date AND %I < %L::date)',
                        ns, parent || '_default', col, m, col, (m + interval '1 month')::date) INTO held;
                END IF;
                IF held THEN
                    RAISE NOTICE '% of % are in %_default, which keeps them: % gets no partition of its own',
                        parent, to_char(m, 'YYYY-MM'), parent, to_char(m, 'YYYY-MM');
                    CONTINUE;
                END IF;
            END IF;
            EXECUTE format('CREATE TABLE %s.%I (LIKE %s.%I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS, CONSTRAINT %I PRIMARY KEY (id))',
                ns, part, ns, parent, part || '_pkey');
            IF m IS NOT NULL THEN
                EXECUTE format('ALTER TABLE %s.%I ADD CONSTRAINT %I CHECK (%I >= %L::date AND %I < %L::date)',
                    ns, part, part || '_month', col, m, col, (m + interval '1 month')::date);
            END IF;
            FOR trg IN
                SELECT t.tgname, t.tgenabled, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t
                WHERE t.tgrelid = (ns || '.' || quote_ident(parent))::regclass AND NOT t.tgisinternal
                    AND (t.tgtype::integer & 1) = 0
                ORDER BY t.tgname
            LOOP
                def := replace(trg.def, ' ON ' || ns || '.' || quote_ident(parent) || ' ', ' ON ' || ns || '.' || quote_ident(part) || ' ');
                IF def = trg.def THEN
                    RAISE EXCEPTION 'trigger % of % could not be copied: %', trg.tgname, parent, trg.def
                        USING ERRCODE = 'object_not_in_prerequisite_state';
                END IF;
                EXECUTE def;
                EXECUTE format('ALTER TABLE %s.%I %s TRIGGER %I', ns, part,
                    CASE trg.tgenabled WHEN 'A' THEN 'ENABLE ALWAYS' WHEN 'R' THEN 'ENABLE REPLICA' WHEN 'D' THEN 'DISABLE' ELSE 'ENABLE' END, trg.tgname);
            END LOOP;
            -- The parent's indexes, built here rather than by ATTACH, which
            -- takes an equal index as the parent's: no index is built under
            -- step 2's locks. Those of a constraint are left to ATTACH.
            FOR idx IN
                SELECT c.relname, i.indisunique, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE i.indrelid = (ns || '.' || quote_ident(parent))::regclass
                    AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
                ORDER BY c.relname
            LOOP
                def := replace(idx.def, format('%s INDEX %I ON ONLY %s.%I ', CASE WHEN idx.indisunique THEN 'CREATE UNIQUE' ELSE 'CREATE' END, idx.relname, ns, parent),
                    format('%s INDEX ON %s.%I ', CASE WHEN idx.indisunique THEN 'CREATE UNIQUE' ELSE 'CREATE' END, ns, part));
                IF def = idx.def THEN
                    RAISE EXCEPTION 'index % of % could not be copied: %', idx.relname, parent, idx.def
                        USING ERRCODE = 'object_not_in_prerequisite_state';
                END IF;
                EXECUTE def;
            END LOOP;
            parents := parents || parent;
            parts := parts || part;
            bounds := bounds || bound;
            months := months || m;
        END LOOP;
    END LOOP;
    IF cardinality(parts) = 0 THEN
        RETURN 0;
    END IF;
    -- 2. Every lock ATTACH takes, first, in a posting's order: SHARE ROW
    -- EXCLUSIVE on posting_sets then postings (no posting is between its
    -- INSERT and its commit once both are held), then ACCESS EXCLUSIVE
    -- on posting_sets_default then postings_default, which only readers
    -- can hold by then.
    LOCK TABLE posting_sets IN SHARE ROW EXCLUSIVE MODE;
    LOCK TABLE postings IN SHARE ROW EXCLUSIVE MODE;
    FOREACH parent IN ARRAY ARRAY['posting_sets', 'postings'] LOOP
        IF to_regclass(ns || '.' || quote_ident(parent || '_default')) IS NOT NULL THEN
            EXECUTE format('LOCK TABLE %s.%I IN ACCESS EXCLUSIVE MODE', ns, parent || '_default');
        END IF;
    END LOOP;
    -- 3. Attach. A month a set was booked into the DEFAULT partition for
    -- since step 1 stays there: its table is dropped.
    FOR k IN 1 .. cardinality(parts) LOOP
        parent := parents[k];
        IF months[k] IS NOT NULL AND to_regclass(ns || '.' || quote_ident(parent || '_default')) IS NOT NULL THEN
            col := CASE parent WHEN 'posting_sets' THEN 'competence' ELSE 'competence_month' END;
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I WHERE %I >= %L::date AND %I < %L::date)',
                ns, parent || '_default', col, months[k], col, (months[k] + interval '1 month')::date) INTO held;
            IF held THEN
                RAISE NOTICE '% of % are in %_default, which keeps them: % gets no partition of its own',
                    parent, to_char(months[k], 'YYYY-MM'), parent, to_char(months[k], 'YYYY-MM');
                EXECUTE format('DROP TABLE %s.%I', ns, parts[k]);
                CONTINUE;
            END IF;
        END IF;
        EXECUTE format('ALTER TABLE %s.%I ATTACH PARTITION %s.%I %s', ns, parent, ns, parts[k], bounds[k]);
        made := made + 1;
    END LOOP;
    RETURN made;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_keep_set_keys()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    set_id bigint;
BEGIN
    INSERT INTO posting_set_keys (id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses)
        SELECT n.id, n.idempotency_key, n.kind, n.competence, n.amount, n.charge_id, n.refund_id, n.reverses
        FROM new_sets n
        WHERE (SELECT k.id FROM posting_set_keys k WHERE k.id = n.id) IS NULL;
    SELECT n.id INTO set_id FROM new_sets n
        WHERE (SELECT count(*) FROM posting_set_keys k
               WHERE k.id = n.id AND k.idempotency_key = n.idempotency_key AND k.kind = n.kind
                 AND k.competence = n.competence AND k.amount = n.amount
                 AND k.charge_id IS NOT DISTINCT FROM n.charge_id AND k.refund_id IS NOT DISTINCT FROM n.refund_id
                 AND k.reverses IS NOT DISTINCT FROM n.reverses) <> 1::bigint
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'posting set % does not match its key in posting_set_keys', set_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_keys';
    END IF;
    RETURN NULL;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_last_closed_month()
 RETURNS date
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    last_closed date;
BEGIN
    LOCK TABLE month_close_lock IN ROW EXCLUSIVE MODE;
    -- Read after the lock: every close before it has committed.
    SELECT max(month) INTO last_closed FROM closed_periods;
    RETURN last_closed;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_lock_account(account_code text)
 RETURNS bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
    SELECT id FROM accounts WHERE code = account_code FOR NO KEY UPDATE
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_refuse_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    RAISE EXCEPTION 'ledger table % is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation', CONSTRAINT = TG_NAME;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_refuse_closed_month()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'posting sets are written at READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    LOCK TABLE month_close_lock IN ROW EXCLUSIVE MODE;
    RETURN NULL;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_refuse_sealed_set()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    set_id      bigint;
    wrong_month boolean;
BEGIN
    IF EXISTS (SELECT 1 FROM (SELECT DISTINCT account_id, currency FROM new_postings) n
               WHERE NOT EXISTS (SELECT 1 FROM ONLY accounts a WHERE a.id = n.account_id AND a.currency = n.currency)) THEN
        RAISE EXCEPTION 'a posting names an account that does not exist in its currency'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'fk_postings_account_currency';
    END IF;
    SELECT c.posting_set_id, c.wrong_month INTO set_id, wrong_month
        FROM (SELECT n.posting_set_id, n.added, n.first_month, s.created_xid,
                     s.id IS NULL OR n.first_month <> s.competence_month OR n.last_month <> s.competence_month AS wrong_month
              FROM (SELECT posting_set_id, count(*) AS added, min(competence_month) AS first_month,
                           max(competence_month) AS last_month
                    FROM new_postings GROUP BY posting_set_id) n
              LEFT JOIN posting_sets s ON s.id = n.posting_set_id
                  AND s.competence >= n.first_month AND s.competence < (n.first_month + '1 mon'::interval)::date) c
        WHERE c.wrong_month OR c.created_xid <> pg_current_xact_id()
           OR (SELECT count(*) FROM postings p WHERE p.posting_set_id = c.posting_set_id AND p.competence_month = c.first_month) <> c.added
        ORDER BY c.wrong_month DESC
        LIMIT 1;
    IF FOUND AND wrong_month THEN
        RAISE EXCEPTION 'posting set % does not exist in the posting''s competence month', set_id
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'fk_postings_set_month';
    END IF;
    IF FOUND THEN
        RAISE EXCEPTION 'posting set % is sealed: its postings are written by the statement that writes its first, in the transaction that created it', set_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
    END IF;
    RETURN NULL;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.ledger_stamp_created_xid()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    NEW.created_xid := pg_current_xact_id();
    RETURN NEW;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.month_sums_refresh(m date)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
 SET jit TO 'off'
AS $function$
DECLARE
    snap    pg_snapshot := pg_current_snapshot();
    old     pg_snapshot;
    revenue bigint[];
    ids     bigint[];
    kinds   text[];
    debits  numeric[];
    credits numeric[];
    sets    bigint[];
    too_big boolean;
BEGIN
    IF current_setting('transaction_isolation') NOT IN ('repeatable read', 'serializable') THEN
        RAISE EXCEPTION 'month_sums_refresh runs in a REPEATABLE READ transaction, not %: its sums and their snapshot must be one',
            upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state';
    END IF;
    -- Another refresh of the month (another replica) holds its row: leave
    -- the month to it. A row lock, which only the owner takes (here): an
    -- advisory lock could be held by any role that can connect. A month
    -- summed for the first time has no row to lock: of two first
    -- refreshes, the second to store fails to serialise (40001).
    PERFORM 1 FROM month_sums s WHERE s.month = m FOR UPDATE SKIP LOCKED;
    IF NOT FOUND AND EXISTS (SELECT 1 FROM month_sums s WHERE s.month = m) THEN
        RETURN 'held';
    END IF;
    IF EXISTS (SELECT 1 FROM posting_sets s WHERE s.competence_month = m AND s.created_xid >= pg_snapshot_xmax(snap)) THEN
        RETURN 'foreign';
    END IF;
    -- Stored sums count only when their snapshot is of this cluster's past.
    SELECT s.snapshot INTO old FROM month_sums s
        WHERE s.month = m AND pg_snapshot_xmax(s.snapshot) <= pg_snapshot_xmax(snap);
    -- The revenue accounts (accounts.Revenue and those under it, in its
    -- currency), summed together as account 0 with their sets counted.
    SELECT coalesce(array_agg(a.id), '{}'::bigint[]) INTO revenue
        FROM accounts a JOIN accounts r ON r.code = 'income:revenue'::text AND r.currency = a.currency
        WHERE a.code = 'income:revenue'::text OR starts_with(a.code, 'income:revenue:'::text);
    SELECT array_agg(x.account_id), array_agg(x.kind), array_agg(x.debits), array_agg(x.credits), array_agg(x.sets),
           coalesce(bool_or(x.debits > 9223372036854775807::numeric OR x.credits > 9223372036854775807::numeric), false)
        INTO ids, kinds, debits, credits, sets, too_big
    FROM (
        WITH r AS MATERIALIZED (
            SELECT p.account_id, s.id AS set_id, s.kind, p.amount
            FROM posting_sets s CROSS JOIN LATERAL (
                SELECT p.account_id, p.amount FROM postings p WHERE p.posting_set_id = s.id OFFSET 0) p
            WHERE old IS NOT NULL AND s.competence_month = m
                AND s.created_xid >= pg_snapshot_xmin(old) AND NOT pg_visible_in_snapshot(s.created_xid, old)
            UNION ALL
            SELECT p.account_id, s.id, s.kind, p.amount
            FROM posting_sets s JOIN postings p ON p.posting_set_id = s.id AND p.competence_month = m
            WHERE old IS NULL AND s.competence_month = m
        ), l AS (
            SELECT r.account_id, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0::bigint), 0::numeric) AS debits,
                coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0::bigint), 0::numeric) AS credits, 0::bigint AS sets
            FROM r GROUP BY r.account_id, r.kind
            UNION ALL
            SELECT 0::bigint, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0::bigint), 0::numeric),
                coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0::bigint), 0::numeric), count(DISTINCT r.set_id)
            FROM r WHERE r.account_id = ANY (revenue) GROUP BY r.kind
            UNION ALL
            SELECT ml.account_id, ml.kind, ml.debits, ml.credits, ml.sets FROM month_sum_lines ml
            WHERE old IS NOT NULL AND ml.month = m
        )
        SELECT l.account_id, l.kind, sum(l.debits) AS debits, sum(l.credits) AS credits, sum(l.sets)::bigint AS sets
        FROM l GROUP BY l.account_id, l.kind
    ) x;
    IF too_big THEN
        RETURN 'overflow';
    END IF;
    INSERT INTO month_sums (month, snapshot, computed_at) VALUES (m, snap, now())
        ON CONFLICT (month) DO UPDATE SET snapshot = excluded.snapshot, computed_at = excluded.computed_at;
    DELETE FROM month_sum_lines ml WHERE ml.month = m;
    INSERT INTO month_sum_lines (month, account_id, kind, debits, credits, sets)
        SELECT m, u.account_id, u.kind, u.debits, u.credits, u.sets
        FROM unnest(ids, kinds, debits, credits, sets) AS u (account_id, kind, debits, credits, sets);
    RETURN 'stored';
END
$function$
;

CREATE OR REPLACE FUNCTION public.outbox_record_purge()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    top_xid xid8;
    top_id bigint;
    newest timestamptz;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        SELECT o.xid, o.id INTO top_xid, top_id FROM outbox o ORDER BY o.xid DESC, o.id DESC LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        SELECT max(o.created_at) INTO newest FROM outbox o;
    ELSE
        SELECT p.xid, p.id INTO top_xid, top_id FROM purged p ORDER BY p.xid DESC, p.id DESC LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        SELECT max(p.created_at) INTO newest FROM purged p;
    END IF;
    UPDATE outbox_purged_through w SET
        xid = CASE WHEN (top_xid, top_id) > (w.xid, w.id) THEN top_xid ELSE w.xid END,
        id = CASE WHEN (top_xid, top_id) > (w.xid, w.id) THEN top_id ELSE w.id END,
        created_through = greatest(w.created_through, newest),
        purged_at = now()
    WHERE w.one;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'outbox_purged_through has no row: the outbox''s purge cannot be recorded'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_outbox_record_purge';
    END IF;
    RETURN NULL;
END;
$function$
;

CREATE OR REPLACE FUNCTION public.reconciliation_analyze_lines()
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    ANALYZE reconciliation_lines;
END
$function$
;

CREATE OR REPLACE FUNCTION public.reconciliation_lines_check_runs()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    PERFORM 1 FROM reconciliation_runs r WHERE r.id IN (SELECT DISTINCT n.run_id FROM new_lines n) FOR KEY SHARE OF r;
    IF EXISTS (SELECT 1 FROM new_lines n WHERE NOT EXISTS (SELECT 1 FROM reconciliation_runs r WHERE r.id = n.run_id)) THEN
        RAISE EXCEPTION 'reconciliation lines of a run that does not exist'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'reconciliation_lines', CONSTRAINT = 'reconciliation_lines_run_id_check';
    END IF;
    RETURN NULL;
END
$function$
;

CREATE OR REPLACE FUNCTION public.reconciliation_lines_keep_run()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    IF NEW.run_id IS DISTINCT FROM OLD.run_id THEN
        RAISE EXCEPTION 'a reconciliation line stays in its run'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'reconciliation_lines', CONSTRAINT = 'reconciliation_lines_run_id_check';
    END IF;
    RETURN NEW;
END
$function$
;

CREATE OR REPLACE FUNCTION public.reconciliation_runs_delete_lines()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    DELETE FROM reconciliation_lines l USING old_runs o WHERE l.run_id = o.id;
    RETURN NULL;
END
$function$
;

CREATE OR REPLACE FUNCTION public.reports_refuse_sealed_snapshot()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_lines n JOIN month_snapshots s ON s.month = n.month
        WHERE s.created_xid <> pg_current_xact_id()
    ) THEN
        RAISE EXCEPTION 'month snapshot is sealed: lines can only be added by the transaction that created it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_trial_balance_snapshots_sealed';
    END IF;
    RETURN NULL;
END;
$function$
;


-- Triggers (every one enabled ALWAYS unless said)

CREATE TRIGGER trg_accounts_immutable BEFORE DELETE OR UPDATE ON public.accounts FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_accounts_no_truncate BEFORE TRUNCATE ON public.accounts FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_api_tokens_no_truncate BEFORE TRUNCATE ON public.api_tokens FOR EACH STATEMENT EXECUTE FUNCTION api_tokens_revoke_only();
CREATE TRIGGER trg_api_tokens_revoke_only BEFORE DELETE OR UPDATE ON public.api_tokens FOR EACH ROW EXECUTE FUNCTION api_tokens_revoke_only();
CREATE TRIGGER trg_closed_periods_append_only BEFORE DELETE OR UPDATE ON public.closed_periods FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_closed_periods_close_lock BEFORE INSERT ON public.closed_periods FOR EACH ROW EXECUTE FUNCTION ledger_close_waits_for_postings();
CREATE TRIGGER trg_closed_periods_no_truncate BEFORE TRUNCATE ON public.closed_periods FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_month_close_lock_no_rows BEFORE INSERT OR DELETE OR UPDATE ON public.month_close_lock FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_month_close_lock_no_truncate BEFORE TRUNCATE ON public.month_close_lock FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_month_snapshots_append_only BEFORE DELETE OR UPDATE ON public.month_snapshots FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_month_snapshots_created_xid BEFORE INSERT ON public.month_snapshots FOR EACH ROW EXECUTE FUNCTION ledger_stamp_created_xid();
CREATE TRIGGER trg_month_snapshots_no_truncate BEFORE TRUNCATE ON public.month_snapshots FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_outbox_record_purge AFTER DELETE ON public.outbox REFERENCING OLD TABLE AS purged FOR EACH STATEMENT EXECUTE FUNCTION outbox_record_purge();
CREATE TRIGGER trg_outbox_record_truncate BEFORE TRUNCATE ON public.outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_record_purge();
CREATE TRIGGER trg_posting_set_keys_append_only BEFORE DELETE OR UPDATE ON public.posting_set_keys FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_posting_set_keys_no_truncate BEFORE TRUNCATE ON public.posting_set_keys FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_posting_sets_append_only BEFORE DELETE OR UPDATE ON public.posting_sets FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON public.posting_sets DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_set();
CREATE TRIGGER trg_posting_sets_keys AFTER INSERT ON public.posting_sets REFERENCING NEW TABLE AS new_sets FOR EACH STATEMENT EXECUTE FUNCTION ledger_keep_set_keys();
CREATE TRIGGER trg_posting_sets_no_truncate BEFORE TRUNCATE ON public.posting_sets FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_posting_sets_open_month BEFORE INSERT ON public.posting_sets FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_closed_month();
CREATE TRIGGER trg_posting_sets_written_open AFTER INSERT ON public.posting_sets REFERENCING NEW TABLE AS new_sets FOR EACH STATEMENT EXECUTE FUNCTION ledger_check_new_sets();
CREATE CONSTRAINT TRIGGER trg_refunds_within_sale AFTER INSERT ON public.posting_sets DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((new.kind = 'refund'::text)) EXECUTE FUNCTION ledger_check_refunds_within_sale();
CREATE TRIGGER trg_postings_append_only BEFORE DELETE OR UPDATE ON public.postings FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_postings_no_truncate BEFORE TRUNCATE ON public.postings FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON public.postings REFERENCING NEW TABLE AS new_postings FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set();
CREATE TRIGGER trg_reconciliation_lines_check_runs AFTER INSERT ON public.reconciliation_lines REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION reconciliation_lines_check_runs(); -- enabled (origin)
CREATE TRIGGER trg_reconciliation_lines_keep_run BEFORE UPDATE OF run_id ON public.reconciliation_lines FOR EACH ROW EXECUTE FUNCTION reconciliation_lines_keep_run(); -- enabled (origin)
CREATE TRIGGER trg_reconciliation_runs_delete_lines AFTER DELETE ON public.reconciliation_runs REFERENCING OLD TABLE AS old_runs FOR EACH STATEMENT EXECUTE FUNCTION reconciliation_runs_delete_lines(); -- enabled (origin)
CREATE TRIGGER trg_trial_balance_snapshots_append_only BEFORE DELETE OR UPDATE ON public.trial_balance_snapshots FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_trial_balance_snapshots_no_truncate BEFORE TRUNCATE ON public.trial_balance_snapshots FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_trial_balance_snapshots_sealed AFTER INSERT ON public.trial_balance_snapshots REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION reports_refuse_sealed_snapshot();
