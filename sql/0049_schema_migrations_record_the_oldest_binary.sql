-- 0049: each applied migration records the oldest razao binary that may
-- still run on the schema it leaves, by that binary's last migration
-- (0 for any). Upgrades roll, expand then contract (README): an expand
-- migration (every one so far) records 0, and the release before keeps
-- serving on the new schema. A contract migration drops what older
-- releases use, says so in its header,
--
--   -- razao: contract 0052
--
-- (binaries whose last migration is 0052 or later no longer use what it
-- drops), and the migrator records that number. The schema's floor is
-- the greatest number recorded: a binary whose last migration is below
-- it refuses to start (razao.CheckSchema, razao.Migrate), naming both.
-- A release from before this column writes its rows without it: 0, as
-- an expand migration, which is all such a release ever applied.
ALTER TABLE schema_migrations ADD COLUMN oldest_binary integer NOT NULL DEFAULT 0
	CONSTRAINT ck_schema_migrations_oldest_binary CHECK (oldest_binary >= 0 AND oldest_binary <= version);
