-- jobctl._move_out_delete: the last step of a page of a tenant's move on the source shard: delete
-- the jobs jobctl._move_out_jobs returned, once the target holds them and the router routes their
-- ids there. Only jobs still pending or failed (unclaimable since their queue rows went), with their
-- events, watchers and durable state (steps, waits, spawns). The dedup key of each job it deletes
-- stays here (jobctl._move_key) until the move finishes, in the same transaction, so that a repeat
-- sent here meanwhile answers the job on the target (jobctl._submit) instead of making a second one.
-- Again for the same ids it deletes nothing.
-- Returns how many jobs it deleted. Writes: job, _event, _watcher, _step, _awaiting, _spawn
-- (delete), _move_key (insert).
create or replace function jobctl._move_out_delete(p_tenant_id text, p_ids bigint[])
returns integer
language plpgsql
as $$
declare
    v_n integer;
begin
    with gone as (
        delete from jobctl.job as j
        where j.tenant_id = p_tenant_id and j.job_id = any(p_ids) and j.state in ('pending', 'failed')
            and exists (
                select from jobctl._tenant_move as m where m.tenant_id = p_tenant_id and m.finished_at is null
            )
        returning j.job_id, j.dedup_key, j.state, j.created_at
    ),
    events as (
        delete from jobctl._event as e where e.job_id in (select g.job_id from gone as g)
    ),
    watchers as (
        delete from jobctl._watcher as w where w.job_id in (select g.job_id from gone as g)
    ),
    steps as (
        delete from jobctl._step as s where s.job_id in (select g.job_id from gone as g)
    ),
    waits as (
        delete from jobctl._awaiting as a where a.job_id in (select g.job_id from gone as g)
    ),
    spawns as (
        delete from jobctl._spawn as x where x.parent_id in (select g.job_id from gone as g)
    ),
    keys as (
        insert into jobctl._move_key (job_id, tenant_id, dedup_key, state, created_at)
        select g.job_id, p_tenant_id, g.dedup_key, g.state, g.created_at from gone as g
        where g.dedup_key is not null
        on conflict (job_id) do nothing
    )
    select count(*) into v_n from gone;
    return v_n;
end
$$;
