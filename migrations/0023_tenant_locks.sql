-- 0023_tenant_locks: the locks that wait are one tenant's own. Immutable once landed: later changes
-- go into a new numbered migration.
--
-- A dedup key and a concurrency key belong to a tenant, and the submits, completions and claims
-- that share one must wait for each other (jobctl._submit, jobctl._admit). In jobctl._lock's shared
-- buckets two tenants' keys could share a row, so one tenant's open transaction (a transactional
-- enqueue that has not committed yet) held up another tenant's submits. Here each row is a
-- tenant's: made on first use (an insert that meets a concurrent inserter of the same row waits
-- for it, and that is the same tenant), and locked like jobctl._lock's rows. A limited tenant's and
-- a limited queue's claims lock the tenant's and the queue's own rows (jobctl._cap), so the
-- shared buckets for those go too.
create table jobctl._tenant_lock (
    tenant_id text not null,
    name text not null,
    bucket integer not null,
    primary key (tenant_id, name, bucket)
);
comment on table jobctl._tenant_lock is
'A tenant''s lock rows (dedup and concurrency-key buckets), made on first use; only the schema owner has
privileges on it (docs/security.md, Locks).';

delete from jobctl._lock
where name in ('dedup', 'key', 'claim-tenant', 'claim-queue');

drop function if exists jobctl._wait_lock(text, text[]);
