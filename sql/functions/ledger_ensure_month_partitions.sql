-- Makes the partitions of posting_sets and postings (sql/0056) for every
-- month after posting_sets_past's range up to the month of `through`,
-- and the DEFAULT partitions when they are missing. Returns how many
-- tables it made. Called by sql/0056 (five months ahead) and by
-- periods.Close before each close (four months after the month it
-- closes), so a month has its partitions long before a set is dated in
-- it.
--
-- * A month is made as a table of its own, then attached (ATTACH
--   PARTITION takes SHARE UPDATE EXCLUSIVE on the parent, which lets
--   every INSERT and SELECT go on; CREATE TABLE ... PARTITION OF would
--   take ACCESS EXCLUSIVE). The table carries the parent's CHECK
--   constraints (LIKE ... INCLUDING CONSTRAINTS), its month as a CHECK,
--   and its id as its primary key; ATTACH builds the parent's indexes on
--   it (empty, so at no cost) and clones the parent's row triggers,
--   enabled as the parent's are.
-- * Statement triggers are not cloned: a partition written by name fires
--   its own, not its parent's. Every statement trigger of the parent
--   (the close lock, the closed-month and created_xid checks, the keys,
--   the sealed set, TRUNCATE refused) is copied onto the new table from
--   pg_get_triggerdef, enabled as the parent's is, before it is
--   attached: a partition is never attached without the barrier.
--   `razao verify` holds every partition to its parent's triggers.
-- * A set dated in a month with no partition of its own goes to the
--   DEFAULT partition (posting_sets_default, postings_default): it is
--   booked, under every trigger, never refused for want of a table. A
--   month whose sets are in the DEFAULT partition keeps them there (a
--   partition for it cannot be attached over them, and they cannot be
--   moved: the ledger is append-only); it is skipped with a NOTICE.
--   docs/partitions.md says how to watch for it.
-- * Calls take turns on posting_sets' SHARE UPDATE EXCLUSIVE lock
--   (which ATTACH takes anyway, and which no INSERT or SELECT waits
--   for), then look again at what exists.
-- * SECURITY DEFINER: the service role closes months and has no right to
--   create tables. It can only make the months the function makes: at
--   most 36 months after the current one, contiguous from the past
--   partition. sql/0056 revoked EXECUTE from PUBLIC; docs/razao-role.sql
--   grants it to the service role. Names are quoted (format %I) and the
--   ledger's schema is named explicitly: the first schema of the pinned
--   search_path is pg_catalog, where CREATE TABLE would otherwise go.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_ensure_month_partitions(through date)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
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
    LOCK TABLE posting_sets IN SHARE UPDATE EXCLUSIVE MODE;
    SELECT substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([0-9-]+)''\)')::date INTO past_end
        FROM pg_class c WHERE c.oid = 'posting_sets_past'::regclass;
    FOREACH parent IN ARRAY ARRAY['posting_sets', 'postings'] LOOP
        col := CASE parent WHEN 'posting_sets' THEN 'competence' ELSE 'competence_month' END;
        m := past_end;
        -- NULL: the DEFAULT partition, made last (once it exists, every
        -- month attached after it reads it for rows of its own).
        FOR part, bound IN
            SELECT parent || '_' || to_char(d, 'YYYY_MM'), format('FOR VALUES FROM (%L) TO (%L)', d::date, (d + interval '1 month')::date)
                FROM generate_series(past_end::timestamp, date_trunc('month', through::timestamp), interval '1 month') d
            UNION ALL SELECT parent || '_default', 'DEFAULT'
        LOOP
            CONTINUE WHEN to_regclass(ns || '.' || quote_ident(part)) IS NOT NULL;
            IF bound <> 'DEFAULT' THEN
                m := substring(bound FROM '''([0-9-]+)''')::date;
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
            IF bound <> 'DEFAULT' THEN
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
            EXECUTE format('ALTER TABLE %s.%I ATTACH PARTITION %s.%I %s', ns, parent, ns, part, bound);
            made := made + 1;
        END LOOP;
    END LOOP;
    RETURN made;
END;
$function$;
