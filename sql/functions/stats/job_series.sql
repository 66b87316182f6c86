-- jobctl.job_series: the job series of /metrics, bounded: jobctl.job_counts of the caller's
-- tenants, but only the max_series tenant queues (default: jobctl._metrics_queues(), 200) that
-- hold the most jobs not yet finished (pending, delayed, retrying, running, waiting, dead), then the
-- most submits and claims over the last minute, each in a row of its own; every other tenant
-- queue summed into one last row whose tenant_id and queue are '' (no tenant or queue has an
-- empty name), so the series' sums stay the totals. A tenant queue with no such job and no event in
-- the last minute (drained: only completed or cancelled jobs left) has no row of its own, only its
-- part of the other row. From the counters: no scan of the jobs.
create or replace function jobctl.job_series(max_series integer default null)
returns table (
    tenant_id text, queue text,
    pending bigint, delayed bigint, retrying bigint, running bigint, dead bigint, completed bigint,
    cancelled bigint, oldest_due_at timestamptz,
    submitted bigint, claimed bigint, succeeded bigint, failed bigint, died bigint, withdrawn bigint,
    retried bigint, fenced bigint,
    wait_buckets bigint[], wait_seconds double precision, run_buckets bigint[], run_seconds double precision,
    waiting bigint, folded integer
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_column
declare
    v_n integer := coalesce(job_series.max_series, jobctl._metrics_queues());
begin
    if v_n not between 1 and 100000 then
        raise exception using errcode = 'JC001', message = format('max_series must be between 1 and 100000, not %s', v_n),
            detail = 'field: max_series';
    end if;
    return query
    with counts as (
        select * from jobctl.job_counts()
    ),
    recent as (
        select r.tenant_id, r.queue, sum(r.submitted + r.claimed) as events
        from jobctl.job_rates(now() - interval '1 minute') as r
        group by r.tenant_id, r.queue
    ),
    ranked as (
        select c.*,
            row_number() over (
                order by c.pending + c.delayed + c.retrying + c.running + c.waiting + c.dead desc,
                    coalesce(w.events, 0) desc, c.tenant_id, c.queue
            ) as rank,
            c.pending + c.delayed + c.retrying + c.running + c.waiting + c.dead > 0 or coalesce(w.events, 0) > 0 as live
        from counts as c
        left join recent as w on w.tenant_id = c.tenant_id and w.queue = c.queue
    ),
    own as (
        select * from ranked as k where k.live and k.rank <= v_n
    )
    select o.tenant_id, o.queue, o.pending, o.delayed, o.retrying, o.running, o.dead, o.completed, o.cancelled,
        o.oldest_due_at, o.submitted, o.claimed, o.succeeded, o.failed, o.died, o.withdrawn, o.retried, o.fenced,
        o.wait_buckets, o.wait_seconds, o.run_buckets, o.run_seconds, o.waiting, 1
    from own as o
    union all
    select '', '', sum(k.pending)::bigint, sum(k.delayed)::bigint, sum(k.retrying)::bigint, sum(k.running)::bigint,
        sum(k.dead)::bigint, sum(k.completed)::bigint, sum(k.cancelled)::bigint, min(k.oldest_due_at),
        sum(k.submitted)::bigint, sum(k.claimed)::bigint, sum(k.succeeded)::bigint, sum(k.failed)::bigint,
        sum(k.died)::bigint, sum(k.withdrawn)::bigint, sum(k.retried)::bigint, sum(k.fenced)::bigint,
        jobctl._stat_sum(k.wait_buckets), sum(k.wait_seconds), jobctl._stat_sum(k.run_buckets), sum(k.run_seconds),
        sum(k.waiting)::bigint, count(*)::integer
    from ranked as k
    where not (k.live and k.rank <= v_n)
    having count(*) > 0
    order by 1, 2;
end
$$;

comment on function jobctl.job_series(integer) is
'The job series /metrics serves, bounded whatever the number of queues: job_counts'' columns (and last, folded:
how many tenant queues the row sums) for the max_series tenant queues (default: the setting
jobctl.metrics_queues, 200) with the most jobs not finished (pending, delayed, retrying, running, waiting, dead),
then the most submits and claims over the last minute; one last row, tenant_id and queue '''', sums every other tenant
queue (a drained one, with no such job and no event in the last minute, has no row of its own). Only the caller''s
tenants. From the counters.
Errors: JC001 max_series not in 1..100000.
Example:
select tenant_id, queue, pending, folded from jobctl.job_series(20);';
