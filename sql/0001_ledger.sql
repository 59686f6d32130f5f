-- 0001: the ledger core. Accounts, posting sets and postings, with the
-- invariants enforced by the database as the last barrier behind Go's own
-- checks. Every constraint and trigger is named so that Go maps driver errors
-- by name, never by message text.

CREATE TABLE accounts (
    id          bigserial   PRIMARY KEY,
    code        text        NOT NULL,
    type        text        NOT NULL,
    normal_side text        NOT NULL,
    currency    char(3)     NOT NULL DEFAULT 'BRL',
    parent_id   bigint      REFERENCES accounts (id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_accounts_code UNIQUE (code),
    -- Target of the postings' (account_id, currency) foreign key: a posting
    -- can only land on an account of its own currency.
    CONSTRAINT uq_accounts_id_currency UNIQUE (id, currency),
    CONSTRAINT ck_accounts_code CHECK (code ~ '^[a-z][a-z0-9-]*(:[a-z0-9][a-z0-9_.-]*)*$' AND length(code) <= 200),
    CONSTRAINT ck_accounts_type CHECK (type IN ('asset', 'liability', 'equity', 'income', 'expense')),
    CONSTRAINT ck_accounts_normal_side CHECK (normal_side IN ('debit', 'credit')),
    CONSTRAINT ck_accounts_currency CHECK (currency ~ '^[A-Z]{3}$')
);

-- The standard chart. Partner sub-accounts
-- (liabilities:commission-payable:{partner}) are created on first use.
INSERT INTO accounts (code, type, normal_side) VALUES
    ('assets', 'asset', 'debit'),
    ('liabilities', 'liability', 'credit'),
    ('equity', 'equity', 'credit'),
    ('income', 'income', 'credit'),
    ('expenses', 'expense', 'debit');
INSERT INTO accounts (code, type, normal_side, parent_id)
SELECT c.code, p.type, p.normal_side, p.id
FROM (VALUES
    ('assets:cash', 'assets'),
    ('income:revenue', 'income'),
    ('expenses:commission', 'expenses'),
    ('expenses:psp-fees', 'expenses'),
    ('liabilities:commission-payable', 'liabilities'),
    ('equity:adjustments', 'equity')
) AS c (code, parent)
JOIN accounts p ON p.code = c.parent;

-- Closed competence months. A row here is final: a month is never reopened.
CREATE TABLE closed_periods (
    month     date        PRIMARY KEY,
    closed_at timestamptz NOT NULL DEFAULT now(),
    closed_by text        NOT NULL DEFAULT current_user,
    CONSTRAINT ck_closed_periods_first_day CHECK (extract(day FROM month) = 1)
);

CREATE TABLE posting_sets (
    id               bigserial   PRIMARY KEY,
    kind             text        NOT NULL,
    idempotency_key  text        NOT NULL,
    -- The business amount of the event in centavos (the sale's A, the
    -- refund's R, the commission's C...): what verify reconciles cash against.
    amount           bigint      NOT NULL,
    currency         char(3)     NOT NULL,
    -- competence is the date the set is booked on; event_at is when the event
    -- happened. They differ only for a late event whose month was closed.
    competence       date        NOT NULL,
    competence_month date        NOT NULL GENERATED ALWAYS AS (date_trunc('month', competence::timestamp)::date) STORED,
    event_at         timestamptz NOT NULL,
    charge_id        text,
    refund_id        text,
    partner          text,
    inbox_id         bigint,
    description      text        NOT NULL DEFAULT '',
    -- sha256 of the set's intent (kind, event, source, legs): the same
    -- idempotency key with another content is a conflict, not a replay.
    content_hash     text        NOT NULL,
    created_xid      xid8        NOT NULL DEFAULT pg_current_xact_id(),
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_posting_sets_idempotency_key UNIQUE (idempotency_key),
    -- Target of the postings' (posting_set_id, competence_month) foreign key.
    CONSTRAINT uq_posting_sets_id_month UNIQUE (id, competence_month),
    CONSTRAINT ck_posting_sets_kind CHECK (kind IN ('sale', 'commission', 'refund', 'commission_reversal', 'payout', 'adjustment')),
    CONSTRAINT ck_posting_sets_amount CHECK (amount > 0),
    CONSTRAINT ck_posting_sets_key CHECK (length(idempotency_key) BETWEEN 1 AND 300),
    CONSTRAINT ck_posting_sets_charge CHECK (kind NOT IN ('sale', 'commission', 'refund', 'commission_reversal') OR charge_id IS NOT NULL),
    CONSTRAINT ck_posting_sets_refund CHECK (kind NOT IN ('refund', 'commission_reversal') OR refund_id IS NOT NULL),
    CONSTRAINT ck_posting_sets_partner CHECK (kind NOT IN ('commission', 'commission_reversal', 'payout') OR partner IS NOT NULL)
);

-- Invariant 3: at most one sale (and one commission) per charge, one refund
-- (and one reversal) per PSP refund id.
CREATE UNIQUE INDEX uq_sale_per_charge ON posting_sets (charge_id) WHERE kind = 'sale';
CREATE UNIQUE INDEX uq_commission_per_charge ON posting_sets (charge_id) WHERE kind = 'commission';
CREATE UNIQUE INDEX uq_refund_per_psp_refund ON posting_sets (charge_id, refund_id) WHERE kind = 'refund';
CREATE UNIQUE INDEX uq_reversal_per_psp_refund ON posting_sets (charge_id, refund_id) WHERE kind = 'commission_reversal';
CREATE INDEX ix_posting_sets_competence_month ON posting_sets (competence_month, id);
CREATE INDEX ix_posting_sets_partner ON posting_sets (partner) WHERE partner IS NOT NULL;

CREATE TABLE postings (
    id               bigserial PRIMARY KEY,
    posting_set_id   bigint    NOT NULL,
    account_id       bigint    NOT NULL,
    currency         char(3)   NOT NULL,
    -- Signed centavos: debit > 0, credit < 0, never 0.
    amount           bigint    NOT NULL,
    competence_month date      NOT NULL,
    CONSTRAINT ck_postings_amount_nonzero CHECK (amount <> 0),
    CONSTRAINT fk_postings_account_currency FOREIGN KEY (account_id, currency) REFERENCES accounts (id, currency),
    CONSTRAINT fk_postings_set_month FOREIGN KEY (posting_set_id, competence_month) REFERENCES posting_sets (id, competence_month)
);
CREATE INDEX ix_postings_set ON postings (posting_set_id);
CREATE INDEX ix_postings_account_month ON postings (account_id, competence_month) INCLUDE (amount);

-- Invariant 1: append-only, whoever connects. Corrections are new sets.
CREATE FUNCTION ledger_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger table % is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation', CONSTRAINT = TG_NAME;
END;
$$;

CREATE TRIGGER trg_posting_sets_append_only BEFORE UPDATE OR DELETE ON posting_sets
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_posting_sets_no_truncate BEFORE TRUNCATE ON posting_sets
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_postings_append_only BEFORE UPDATE OR DELETE ON postings
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_postings_no_truncate BEFORE TRUNCATE ON postings
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
-- Accounts are never renamed, retyped or removed: postings and caches rely
-- on an account meaning the same thing forever.
CREATE TRIGGER trg_accounts_immutable BEFORE UPDATE OR DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_closed_periods_append_only BEFORE UPDATE OR DELETE ON closed_periods
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_closed_periods_no_truncate BEFORE TRUNCATE ON closed_periods
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();

-- Invariant 6: no posting set dated in a closed month. Closing a month takes
-- a SHARE ROW EXCLUSIVE lock on posting_sets, so no set can slip in between
-- this check and its commit.
CREATE FUNCTION ledger_refuse_closed_month() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Generated columns are not computed yet in a BEFORE trigger.
    IF EXISTS (SELECT 1 FROM closed_periods WHERE month = date_trunc('month', NEW.competence::timestamp)::date) THEN
        RAISE EXCEPTION 'competence month % is closed', to_char(NEW.competence, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER trg_posting_sets_open_month BEFORE INSERT ON posting_sets
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_closed_month();

-- Postings join only a set written by the same transaction: a set, once
-- committed, is sealed, so the balance check at its commit stays true.
CREATE FUNCTION ledger_refuse_sealed_set() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_postings n JOIN posting_sets s ON s.id = n.posting_set_id
        WHERE s.created_xid <> pg_current_xact_id()
    ) THEN
        RAISE EXCEPTION 'posting set is sealed: postings can only be added by the transaction that created it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON postings
    REFERENCING NEW TABLE AS new_postings
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set();

-- Invariants 2 and 3, checked at COMMIT: a set has at least two postings,
-- sums to zero per currency, and refunds never exceed their sale.
CREATE FUNCTION ledger_check_posting_set() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    legs         int;
    unbalanced   text;
    sale_amount  bigint;
    refunded     bigint;
BEGIN
    SELECT count(*) INTO legs FROM postings WHERE posting_set_id = NEW.id;
    IF legs < 2 THEN
        RAISE EXCEPTION 'posting set % has % posting(s); at least 2 are required', NEW.id, legs
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    SELECT string_agg(currency || ' ' || total, ', ') INTO unbalanced FROM (
        SELECT currency, sum(amount) AS total FROM postings
        WHERE posting_set_id = NEW.id GROUP BY currency HAVING sum(amount) <> 0
    ) u;
    IF unbalanced IS NOT NULL THEN
        RAISE EXCEPTION 'posting set % does not balance: %', NEW.id, unbalanced
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    IF NEW.kind = 'refund' THEN
        -- Serialise refunds of one charge so two concurrent commits cannot
        -- each see room for themselves.
        PERFORM pg_advisory_xact_lock(hashtextextended('razao-refund:' || NEW.charge_id, 0));
        SELECT amount INTO sale_amount FROM posting_sets WHERE kind = 'sale' AND charge_id = NEW.charge_id;
        SELECT coalesce(sum(amount), 0) INTO refunded FROM posting_sets WHERE kind = 'refund' AND charge_id = NEW.charge_id;
        IF sale_amount IS NULL OR refunded > sale_amount THEN
            RAISE EXCEPTION 'refunds of charge % total % above its sale %', NEW.charge_id, refunded, coalesce(sale_amount, 0)
                USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_refunds_within_sale';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON posting_sets
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_set();

-- Triggers fire even under session_replication_role = replica: "whoever
-- connects" includes a session that tries to sneak past them that way.
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_append_only;
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_no_truncate;
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_open_month;
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_balanced;
ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_append_only;
ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_no_truncate;
ALTER TABLE postings ENABLE ALWAYS TRIGGER trg_postings_sealed_set;
ALTER TABLE closed_periods ENABLE ALWAYS TRIGGER trg_closed_periods_append_only;
ALTER TABLE accounts ENABLE ALWAYS TRIGGER trg_accounts_immutable;
ALTER TABLE closed_periods ENABLE ALWAYS TRIGGER trg_closed_periods_no_truncate;
