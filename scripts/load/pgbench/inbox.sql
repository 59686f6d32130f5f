-- (b) razao's inbox insert alone: one delivery of ~200 bytes, with the
-- event and audit headers razao keeps, INSERT ... ON CONFLICT DO NOTHING
-- RETURNING, committed on its own.
INSERT INTO bench_inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, headers, status, next_attempt_at)
VALUES ('psp|charge.paid|bench-b-' || nextval('bench_key_seq'), 'psp', 'standard', 'loja-dev', 'charge.paid',
        'bench-b-' || currval('bench_key_seq'), 'paid', 'bench-charge',
        '{"Kind": "paid","Type": "charge.paid","EventID": "bench","ChargeID": "bench-charge","PSPRef": "","RefundID": "","Amount": 4990,"HasAmount": true,"FullRefund": false,"Fee": 0,"HasFee": false,"OccurredAt": "2026-08-10T120000Z","Extra": null}',
        convert_to('{"type": "charge.paid","timestamp": "2026-08-10T120000Z","data": {"charge_id": "bench-charge","amount": 4990,"occurred_at": "2026-08-10T120000Z"}}', 'UTF8'),
        '{"Content-Type": "application/json","Webhook-Id": "bench","Webhook-Timestamp": "1786363200","Webhook-Signature": "v1,Jq0Yr8Yx3mVtq5b3b6bN8d0mX0tKc8xL1m9q2o3p4r4="}',
        'pending', now() + interval '5 seconds')
ON CONFLICT (endpoint, event_type, event_id) DO NOTHING
RETURNING id, endpoint, event_type, event_id;
