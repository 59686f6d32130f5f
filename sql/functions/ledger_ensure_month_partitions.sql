-- Makes the partitions of posting_sets and postings (sql/0056) for every
-- month after posting_sets_past's range up to the month of `through`,
-- and the DEFAULT partitions when they are missing. Returns how many
-- tables it attached. Called by razao serve's keeper on every replica (at
-- start and every 6 h, four months after the current one:
-- periods.Keeper), by periods.Close before each close (four months after
-- the month it closes), and by an operator; sql/0056 makes none.
--
-- * Nothing to make costs no lock. When both DEFAULT partitions exist and
--   each parent has a month partition for `through`'s month or a later
--   one, it returns 0 having read the catalog only (regclass lookups,
--   pg_inherits, pg_get_expr given no relation: given one, it would lock
--   it): no table is locked, so the keeper's calls never wait on anyone
--   nor hold anyone up. A month missing before the last one made is one
--   the DEFAULT partition keeps (below): nothing is to be made for it.
-- * A month is made as a table of its own, whole, then attached. The
--   table carries the parent's CHECK constraints (LIKE ... INCLUDING
--   CONSTRAINTS), its month as a CHECK, its id as primary key, a copy of
--   each statement trigger of the parent (not cloned by PostgreSQL: a
--   partition written by name fires its own, not its parent's; copied
--   from pg_get_triggerdef, enabled as the parent's, so a partition is
--   never attached without the barrier: the close lock, the closed-month
--   and created_xid checks, the keys, the sealed set, TRUNCATE refused),
--   and each of the parent's indexes, built on the empty table. ATTACH
--   PARTITION then takes those indexes as the parent's rather than build
--   its own under its locks (building them is most of the work;
--   docs/partitions.md has the figures), clones the parent's row
--   triggers, enabled as the parent's are, and scans the DEFAULT
--   partition for rows of the month.
--   Neither parent has a foreign key: no other table is locked. `razao
--   verify` holds every partition to its parent's triggers.
-- * A set dated in a month with no partition of its own goes to the
--   DEFAULT partition (posting_sets_default, postings_default): it is
--   booked, under every trigger, never refused for want of a table. A
--   month whose sets are in the DEFAULT partition keeps them there (a
--   partition for it cannot be attached over them, and they cannot be
--   moved: the ledger is append-only); it is skipped with a NOTICE, and
--   looked at again under the locks of step 2 (a set may have been
--   booked there since step 1). docs/partitions.md says how to watch it.
--
-- The lock order, and the deadlock it ends. ATTACH takes SHARE UPDATE
-- EXCLUSIVE on the parent and ACCESS EXCLUSIVE on its DEFAULT partition.
-- Attached month by month, posting_sets' months first, the function held
-- posting_sets_default while it went for postings_default. A posting
-- goes the other way: its INSERT holds ROW EXCLUSIVE on posting_set_keys,
-- posting_sets and postings, and at the statement's end
-- trg_postings_sealed_set (ledger_refuse_sealed_set) reads both parents;
-- planned afresh (a new session, or after a partition was attached), its
-- query locks the postings partitions of its subquery ACCESS SHARE,
-- postings_default among them, before posting_sets'. pg_locks while the
-- two overlapped:
--
--   function  granted AccessExclusiveLock  posting_sets_default
--             waiting AccessExclusiveLock  postings_default
--   posting   granted AccessShareLock      postings_default
--             waiting AccessShareLock      posting_sets_default
--
-- a cycle, 40P01 for one of them after deadlock_timeout (serve's keeper
-- at start, and the console's adjustment failed with a 500;
-- periods/partitions_lock_test.go holds both orders at that point with a
-- lock gate). So every strong lock is taken first, in a posting's order:
--
--   1. SHARE UPDATE EXCLUSIVE on posting_sets, which no INSERT or SELECT
--      waits for; calls (several replicas' keepers, a close) take turns
--      on it and look again at what exists, then make the tables above,
--      while postings go on.
--   2. SHARE ROW EXCLUSIVE on posting_sets, then on postings. It
--      conflicts with the ROW EXCLUSIVE a posting holds on both from its
--      INSERT to its commit: the function waits for the postings in
--      flight, new ones wait for it, and once it holds both no posting is
--      between its INSERT and its commit, holding a DEFAULT partition it
--      will still need. Then ACCESS EXCLUSIVE on posting_sets_default,
--      then on postings_default, which only readers can hold by then.
--   3. ATTACH each table, under locks already held, and commit.
--
-- * lock_timeout is 200 ms in the function (its SET clause; half of
--   deadlock_timeout when that is lower), below deadlock_timeout (1 s by
--   default). A reader of a DEFAULT partition that then posts (it waits
--   for step 2's lock) still closes a cycle; the function, which waited
--   first, gives up first (55P03, nothing made), and the posting goes
--   on: a posting is never the one refused. A long reader, or another
--   call holding step 1's lock, makes it give up the same way. Callers
--   take 55P03 as "try later" (periods.ErrPartitionsBusy): the keeper
--   tries again a minute later, a close goes on without its partitions.
--   A posting waits for the function at most from step 2 to its commit:
--   up to lock_timeout per lock of step 2, then the attaches, which read
--   and write the catalog only (empty DEFAULT partitions; one that holds
--   rows is read whole by every ATTACH).
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
$function$;
