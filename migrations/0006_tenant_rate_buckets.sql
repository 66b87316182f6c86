-- 0006_tenant_rate_buckets: each rate-limited tenant's submit and claim token buckets.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- A bucket is a sequence (created by jobctl.put_tenant) holding its theoretical arrival time
-- (GCRA) counted in tokens since the epoch: taking n tokens is n nextval calls. A sequence is not
-- MVCC: taking tokens leaves no dead tuple and updates no row, so 10,000 submits a second for one
-- tenant do not queue on a row lock, and an old snapshot held open does not slow them down.
alter table jobctl.tenant
add column submit_bucket regclass,
add column claim_bucket regclass;
