-- 0049: a divergence's detail in its structured form beside its English
-- text. detail_code names the kind of detail (divergences.Said's table)
-- and detail_args holds its arguments as a JSON array (amounts in
-- centavos as numbers, ids and free text as strings), so the finance
-- console can say it in Portuguese while detail keeps the English the
-- API has always returned. Both NULL for the rows opened before this
-- migration: those keep only detail, and the console shows it as stored.
--
-- ck_divergences_detail_args keeps the pair whole: a code without its
-- arguments (or the reverse) could be rendered by neither language.
-- Adding nullable columns without a default rewrites nothing; the check
-- reads the table once, in the migration's transaction.
ALTER TABLE divergences ADD COLUMN detail_code text, ADD COLUMN detail_args jsonb;
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_detail_args
	CHECK ((detail_code IS NULL) = (detail_args IS NULL) AND (detail_args IS NULL OR jsonb_typeof(detail_args) = 'array'));
