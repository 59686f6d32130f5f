-- 0029: a refund known by two ids; a statement's lines checked against
-- their run once per statement.
--
-- A refund known by two ids. A PSP's statement file may name a
-- refund by an id of its own where its webhook names it by another (Hodle:
-- the webhook's data.eventId; the CSV export, another id): the two are
-- the same refund when they are of the same charge, of the same amount
-- and close in time, and whichever comes second books nothing. The pair
-- is kept here, so that each booked refund is paired at most once (a
-- second refund of the same amount is then booked, not absorbed) and a
-- later statement line or redelivery under the other id is known at once.
CREATE TABLE refund_aliases (
    charge_id  text        NOT NULL,
    -- The id the refund is booked under (posting_sets.refund_id).
    refund_id  text        NOT NULL,
    -- The other side's id for the same refund.
    alias_id   text        NOT NULL,
    -- The delivery that found the pair.
    inbox_id   bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (charge_id, alias_id),
    CONSTRAINT uq_refund_aliases_refund UNIQUE (charge_id, refund_id),
    CONSTRAINT ck_refund_aliases_other CHECK (alias_id <> refund_id)
);

-- A statement's lines name their run, checked once per statement instead
-- of by a foreign key: the key's trigger looked the run up once per line,
-- a fifth of the time of writing a million-line statement. The check
-- below does what the key did, set-based: it locks the runs the new lines
-- name as the key does (FOR KEY SHARE: no run is deleted under lines being
-- written) and refuses lines of a run that does not exist; a line's run is
-- never changed; deleting a run deletes its lines.
ALTER TABLE reconciliation_lines DROP CONSTRAINT reconciliation_lines_run_id_fkey;

CREATE FUNCTION reconciliation_lines_check_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM reconciliation_runs r WHERE r.id IN (SELECT DISTINCT n.run_id FROM new_lines n) FOR KEY SHARE OF r;
    IF EXISTS (SELECT 1 FROM new_lines n WHERE NOT EXISTS (SELECT 1 FROM reconciliation_runs r WHERE r.id = n.run_id)) THEN
        RAISE EXCEPTION 'reconciliation lines of a run that does not exist'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'reconciliation_lines', CONSTRAINT = 'reconciliation_lines_run_id_check';
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION reconciliation_lines_keep_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.run_id IS DISTINCT FROM OLD.run_id THEN
        RAISE EXCEPTION 'a reconciliation line stays in its run'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'reconciliation_lines', CONSTRAINT = 'reconciliation_lines_run_id_check';
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION reconciliation_runs_delete_lines() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM reconciliation_lines l USING old_runs o WHERE l.run_id = o.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER trg_reconciliation_lines_check_runs AFTER INSERT ON reconciliation_lines
    REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION reconciliation_lines_check_runs();
-- Fires only for an UPDATE that sets run_id, which razao never does.
CREATE TRIGGER trg_reconciliation_lines_keep_run BEFORE UPDATE OF run_id ON reconciliation_lines
    FOR EACH ROW EXECUTE FUNCTION reconciliation_lines_keep_run();
CREATE TRIGGER trg_reconciliation_runs_delete_lines AFTER DELETE ON reconciliation_runs
    REFERENCING OLD TABLE AS old_runs FOR EACH STATEMENT EXECUTE FUNCTION reconciliation_runs_delete_lines();

-- Names resolved in the ledger's schema, pg_temp last (see 0012).
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'reconciliation_lines_check_runs()', 'reconciliation_lines_keep_run()', 'reconciliation_runs_delete_lines()'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;
