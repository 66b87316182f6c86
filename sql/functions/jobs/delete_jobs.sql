-- jobctl.delete_jobs: delete one batch of the finished jobs a bulk filter matches: at most max_jobs
-- completed, dead or cancelled hot jobs of the caller's tenants with job_id above after_id, in job_id
-- order, with their history; the counters lose them from their state. A finished job has no queue
-- or lease row; only the edges of children still waiting on it (under `wait`) refer to it, and those
-- children are cancelled (jobctl._parents_erased). A job retried meanwhile is no longer finished and
-- is skipped (the delete re-checks the state under its row lock). The caller loops, one short
-- transaction a call, passing last_id back as after_id until done. One audit entry a call.
-- Writes: job, _event and _step (delete), _stat_delta, audit_log; _edge, _waiting and job through _parents_erased.
create or replace function jobctl.delete_jobs(filter jsonb, max_jobs integer default 1000, after_id bigint default null)
returns table (acted integer, skipped integer, last_id bigint, done boolean, stopped text, retry_after numeric)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_filter jsonb := jobctl._job_filter(filter);
    v_tenants text[];
    v_ids bigint[];
    v_acted integer;
    v_gone bigint[];
begin
    perform jobctl._bulk_check(max_jobs, after_id);
    v_tenants := jobctl._acting_tenants('jobs:delete');
    if v_filter ? 'tenant_id' then
        perform jobctl._require_tenant(v_filter ->> 'tenant_id', 'jobs:delete', 'filter.tenant_id');
    end if;
    v_ids := array(
        select f.id from jobctl._filter_jobs(v_filter, v_tenants, jobctl._action_states('delete'), after_id, max_jobs) as f (id)
    );
    with gone as (
        delete from jobctl.job as j
        where j.job_id = any(v_ids) and j.state = any(jobctl._action_states('delete'))
        returning j.job_id, j.created_at, j.tenant_id, j.queue, j.state
    ),
    history as (
        delete from jobctl._event as e
        using gone as g
        where e.job_id = g.job_id and e.job_created_at = g.created_at
    ),
    steps as (
        delete from jobctl._step as s using gone as g where s.job_id = g.job_id
    ),
    tally as (
        insert into jobctl._stat_delta (tenant_id, queue, dead, completed, cancelled)
        select g.tenant_id, g.queue, -count(*) filter (where g.state = 'dead'),
            -count(*) filter (where g.state = 'completed'), -count(*) filter (where g.state = 'cancelled')
        from gone as g
        group by g.tenant_id, g.queue
    )
    select count(*), array_agg(g.job_id) into v_acted, v_gone from gone as g;
    -- children still waiting on a deleted (dead or cancelled) parent under `wait`: it can no longer
    -- be retried, so they are cancelled (docs/workflows.md)
    perform jobctl._parents_erased(v_gone);
    perform jobctl._audit('delete_jobs', v_filter ->> 'tenant_id', jsonb_build_object(
        'filter', v_filter || case when v_filter ? 'subject_key' then '{"subject_key": "(given)"}'::jsonb else '{}' end,
        'after_id', after_id, 'max_jobs', max_jobs, 'last_id', v_ids[cardinality(v_ids)], 'deleted', v_acted,
        'skipped', cardinality(v_ids) - v_acted
    ));
    return query select v_acted, cardinality(v_ids) - v_acted, coalesce(v_ids[cardinality(v_ids)], after_id),
        cardinality(v_ids) < max_jobs, null::text, null::numeric;
end
$$;

comment on function jobctl.delete_jobs(jsonb, integer, bigint) is
'Delete one batch of the finished jobs a filter matches (the filter of jobctl.count_jobs), with their
history: at most max_jobs (1..1000, default 1000) completed, dead or cancelled hot jobs with job_id above after_id,
in job_id order (archived jobs are left to retention). A job still waiting on a deleted one (on_parent_failure wait)
is cancelled: the parent can no longer be retried. Returns acted (deleted), skipped (retried meanwhile), last_id
(pass it as after_id to the next call) and done (no more to look at); stopped and retry_after are always NULL (the
shape of retry_jobs). Call it in a loop, one transaction a call; each call is audited with its filter and counts.
Needs the jobs:delete scope through the API (jobs:cancel does not allow it).
Errors: JC001 a bad filter (field filter.<key>), max_jobs or after_id, 42501 filter.tenant_id is another tenant.
Example:
select * from jobctl.delete_jobs(''{"tenant_id": "acme", "state": "dead", "finished_before": "2026-12-01T00:00:00Z"}'');';
