-- 0019: a charge's paid_ref carries the scheme of the payment that paid it
-- (hodle:track-1, standard:event:msg_1), as the code writes it from now on.
-- Before, references of every scheme shared one namespace: a Hodle deposit
-- whose trackId was literally "event:msg_1" passed for the standard
-- delivery kept as event:msg_1, and was absorbed as its redelivery.
--
-- Each paid charge was paid by exactly one sale (uq_sale_per_charge),
-- written with the inbox row that paid it: that row's scheme is the
-- reference's. A reference already in its scheme's form is left alone, so
-- the statement can run again without prefixing twice. A paid_ref with no
-- sale from an inbox row (none is expected: every payment comes through
-- the inbox) stays as it was; it then proves no redelivery, and a later
-- payment of its charge is a second_payment divergence for finance.
UPDATE charges c
SET paid_ref = i.scheme || ':' || c.paid_ref
FROM posting_sets s
JOIN inbox i ON i.id = s.inbox_id
WHERE s.kind = 'sale' AND s.charge_id = c.id
  AND c.paid_ref IS NOT NULL
  AND left(c.paid_ref, length(i.scheme) + 1) <> i.scheme || ':';
