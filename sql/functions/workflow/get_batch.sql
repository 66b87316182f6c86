-- jobctl.get_batch: a batch with its members' counts by state (while it runs) or by outcome (once
-- it ended), for the caller's tenants. Reads: batch, job (the members, by batch_id).
create or replace function jobctl.get_batch(batch_id bigint)
returns table (
    batch_id bigint, tenant_id text, created_at timestamptz, size integer, finished_at timestamptz,
    counts jsonb, on_finish bigint, on_success bigint, on_discard bigint
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select b.batch_id, b.tenant_id, b.created_at, b.size, b.finished_at,
        coalesce(b.counts, (
            select jsonb_object_agg(m.state, m.n) from (
                select j.state, count(*) as n from jobctl.job as j
                where j.batch_id = b.batch_id and j.job_id <> all(array_remove(array[b.on_finish, b.on_success, b.on_discard], null))
                group by j.state
            ) as m
        )),
        b.on_finish, b.on_success, b.on_discard
    from jobctl.batch as b
    where b.batch_id = get_batch.batch_id
        and b.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[b.tenant_id]))
$$;

comment on function jobctl.get_batch(bigint) is
'A batch (jobctl.submit_batch): its size, the callbacks'' ids, and counts: once it ended (finished_at set),
its members'' outcomes {"completed": n, "dead": n, "cancelled": n}, fixed when the last member ended and what its
callbacks read; before, the members'' current states. Zero rows if unknown or another tenant''s.
Errors: none.
Example:
select finished_at, counts from jobctl.get_batch(7);  -- counts {"completed": 98, "dead": 2, "cancelled": 0}';
