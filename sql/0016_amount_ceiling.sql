-- 0016: the hard ceiling on amounts: the database's last barrier beside the
-- configured max_amount (default R$ 10 billion, checked in Go by
-- money.Limit before anything is written). Whatever the configuration or
-- a bug in Go, no posting set, posting or charge holds more than
-- 10^15 centavos (R$ 10 trillion, money.Ceiling): one amount can no
-- longer be 2^63−1 and break every sum that includes it.
--
-- NOT VALID first, so that a ledger already holding such a row still
-- migrates (the constraint then guards every new row, and verify reports
-- the old one); validated at once where no row breaks it, which is every
-- ledger that was never attacked. The bounds are written as two
-- comparisons, not abs(), which overflows on -2^63.

ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_amount_ceiling
    CHECK (amount <= 1000000000000000) NOT VALID;
ALTER TABLE postings ADD CONSTRAINT ck_postings_amount_ceiling
    CHECK (amount <= 1000000000000000 AND amount >= -1000000000000000) NOT VALID;
ALTER TABLE charges ADD CONSTRAINT ck_charges_amount_ceiling
    CHECK (amount <= 1000000000000000) NOT VALID;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM posting_sets WHERE amount > 1000000000000000) THEN
        ALTER TABLE posting_sets VALIDATE CONSTRAINT ck_posting_sets_amount_ceiling;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM postings WHERE amount > 1000000000000000 OR amount < -1000000000000000) THEN
        ALTER TABLE postings VALIDATE CONSTRAINT ck_postings_amount_ceiling;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM charges WHERE amount > 1000000000000000) THEN
        ALTER TABLE charges VALIDATE CONSTRAINT ck_charges_amount_ceiling;
    END IF;
END
$$;
