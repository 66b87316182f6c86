-- jobctl.count_job_states: the hot jobs of the caller's tenants that a bulk filter matches (as
-- count_jobs takes it), by the counters' gauges: pending (due), delayed (run_at to come, never
-- attempted), retrying (waiting out a backoff), running, dead, completed, cancelled and waiting (for
-- their parents or their batch). What the dashboard's jobs page counts by state when its filter holds
-- more than a tenant and a queue (job ids, keys, times, error text), which the counters cannot
-- answer. The filter's state key is ignored (the counts are by state). At most max_count jobs are
-- read; capped says there were more (the counts are then of the first max_count by job_id).
-- Reads: job, _delayed (jobctl._filter_jobs).
create or replace function jobctl.count_job_states(filter jsonb, max_count integer default 10000)
returns table (
    pending bigint, delayed bigint, retrying bigint, running bigint, dead bigint, completed bigint,
    cancelled bigint, waiting bigint, capped boolean
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_variable
declare
    v_filter jsonb := jobctl._job_filter(filter) - 'state';
begin
    if max_count is null or max_count not between 1 and 100000 then
        raise exception using errcode = 'JC001',
            message = format('max_count must be between 1 and 100000, not %s', coalesce(max_count::text, 'NULL')),
            detail = 'field: max_count';
    end if;
    if v_filter ? 'tenant_id' then
        perform jobctl._require_tenant(v_filter ->> 'tenant_id', 'jobs:read', 'filter.tenant_id');
    end if;
    return query
    with ids as (
        select f.id from jobctl._filter_jobs(v_filter, jobctl._acting_tenants('jobs:read'), null, null, max_count + 1)
            as f (id)
    ),
    gauged as (
        -- as the counters have it: a pending or failed job in _delayed is delayed or retrying (its
        -- retry flag, jobctl._promote_due), one due (in _ready or _held) is pending
        select case
            when j.state not in ('pending', 'failed') then j.state
            when d.job_id is null then 'pending'
            when d.retry then 'retrying'
            else 'delayed'
        end as gauge
        from (select i.id from ids as i order by i.id limit max_count) as p
        inner join jobctl.job as j on j.job_id = p.id
        left join jobctl._delayed as d on d.run_at = j.run_at and d.job_id = j.job_id
    )
    select count(*) filter (where g.gauge = 'pending'), count(*) filter (where g.gauge = 'delayed'),
        count(*) filter (where g.gauge = 'retrying'), count(*) filter (where g.gauge = 'running'),
        count(*) filter (where g.gauge = 'dead'), count(*) filter (where g.gauge = 'completed'),
        count(*) filter (where g.gauge = 'cancelled'), count(*) filter (where g.gauge = 'waiting'),
        (select count(*) from ids) > max_count
    from gauged as g;
end
$$;

comment on function jobctl.count_job_states(jsonb, integer) is
'The hot jobs of the caller''s tenants a bulk filter matches (the filter of count_jobs; its state key is
ignored), by gauge as job_counts has them: pending (due), delayed, retrying, running, dead, completed, cancelled,
waiting (for parents or a batch). At most max_count (1..100000, default 10000) jobs are read; capped true means
more match and the counts are of the first max_count by job_id. The dashboard''s chips for a filter the counters
cannot answer (job ids, keys, times, error text).
Errors: JC001 a bad filter (as count_jobs) or max_count, 42501 filter.tenant_id is another tenant.
Example:
select * from jobctl.count_job_states(''{"tenant_id": "acme", "job_ids": [12, 40]}'');';
