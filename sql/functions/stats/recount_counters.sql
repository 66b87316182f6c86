-- jobctl.recount_counters: the counters' gauges (job_counts) against the jobs as they are, by a scan
-- of the queue tables and of the hot job partitions: the mismatches, one row per tenant, queue and
-- gauge. With fix, first blocks the counters' writers (claims, submits and acks wait until commit:
-- an EXCLUSIVE lock on _stat_delta), folds every delta and sets the gauges to what the scan found.
-- A repair and a test oracle, not a routine call. Writes (fix): _stat_delta, _stat.
create or replace function jobctl.recount_counters(fix boolean default false)
returns table (tenant_id text, queue text, gauge text, counted bigint, actual bigint)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if recount_counters.fix then
        lock table jobctl._stat_delta in exclusive mode;
        perform jobctl._stat_fold(2147483647);
    end if;
    create temporary table _recount on commit drop as
    with actual as (
        select x.tenant_id, x.queue, sum(x.pending) as pending, sum(x.delayed) as delayed,
            sum(x.retrying) as retrying, sum(x.running) as running, sum(x.dead) as dead,
            sum(x.completed) as completed, sum(x.cancelled) as cancelled, sum(x.waiting) as waiting
        from (
            select r.tenant_id, r.queue, count(*) as pending, 0 as delayed, 0 as retrying, 0 as running,
                0 as dead, 0 as completed, 0 as cancelled, 0 as waiting
            from jobctl._ready as r group by 1, 2
            union all
            select h.tenant_id, h.queue, count(*), 0, 0, 0, 0, 0, 0, 0 from jobctl._held as h group by 1, 2
            union all
            select d.tenant_id, d.queue, 0, count(*) filter (where not d.retry), count(*) filter (where d.retry),
                0, 0, 0, 0, 0
            from jobctl._delayed as d group by 1, 2
            union all
            select w.tenant_id, w.queue, 0, 0, 0, 0, 0, 0, 0, count(*) from jobctl._waiting as w group by 1, 2
            union all
            select u.tenant_id, u.queue, 0, 0, 0, count(*), 0, 0, 0, 0 from jobctl._running as u group by 1, 2
            union all
            select j.tenant_id, j.queue, 0, 0, 0, 0, count(*) filter (where j.state = 'dead'),
                count(*) filter (where j.state = 'completed'), count(*) filter (where j.state = 'cancelled'), 0
            from jobctl.job as j where j.state in ('dead', 'completed', 'cancelled') group by 1, 2
        ) as x
        group by 1, 2
    ),
    counted as (
        select c.tenant_id, c.queue, c.pending, c.delayed, c.retrying, c.running, c.dead, c.completed, c.cancelled,
            c.waiting
        from jobctl.job_counts() as c
    )
    select coalesce(c.tenant_id, a.tenant_id) as tenant_id, coalesce(c.queue, a.queue) as queue, g.gauge,
        g.counted, g.actual
    from counted as c
    full join actual as a on a.tenant_id = c.tenant_id and a.queue = c.queue
    cross join lateral (values
        ('pending', coalesce(c.pending, 0), coalesce(a.pending, 0)::bigint),
        ('delayed', coalesce(c.delayed, 0), coalesce(a.delayed, 0)::bigint),
        ('retrying', coalesce(c.retrying, 0), coalesce(a.retrying, 0)::bigint),
        ('running', coalesce(c.running, 0), coalesce(a.running, 0)::bigint),
        ('dead', coalesce(c.dead, 0), coalesce(a.dead, 0)::bigint),
        ('completed', coalesce(c.completed, 0), coalesce(a.completed, 0)::bigint),
        ('cancelled', coalesce(c.cancelled, 0), coalesce(a.cancelled, 0)::bigint),
        ('waiting', coalesce(c.waiting, 0), coalesce(a.waiting, 0)::bigint)
    ) as g (gauge, counted, actual)
    where g.counted <> g.actual;
    if recount_counters.fix then
        insert into jobctl._stat_delta (
            tenant_id, queue, pending, delayed, retrying, running, dead, completed, cancelled, waiting
        )
        select r.tenant_id, r.queue,
            sum(r.actual - r.counted) filter (where r.gauge = 'pending'),
            sum(r.actual - r.counted) filter (where r.gauge = 'delayed'),
            sum(r.actual - r.counted) filter (where r.gauge = 'retrying'),
            sum(r.actual - r.counted) filter (where r.gauge = 'running'),
            sum(r.actual - r.counted) filter (where r.gauge = 'dead'),
            sum(r.actual - r.counted) filter (where r.gauge = 'completed'),
            sum(r.actual - r.counted) filter (where r.gauge = 'cancelled'),
            sum(r.actual - r.counted) filter (where r.gauge = 'waiting')
        from _recount as r
        group by r.tenant_id, r.queue;
    end if;
    return query select r.tenant_id, r.queue, r.gauge, r.counted, r.actual from _recount as r
    order by 1, 2, 3;
end
$$;

comment on function jobctl.recount_counters(boolean) is
'Check the counters behind job_counts, job_overview, stats and /metrics against the jobs themselves,
by a scan of the queue tables and the hot job partitions: the (tenant, queue, gauge) rows where they differ,
with the counted and the actual number. With fix => true, also set the gauges right: claims, submits and acks
wait for it (it locks the counters'' table until commit). Event totals and histograms are not recounted.
Errors: none.
Example:
select * from jobctl.recount_counters();             -- no rows: the counters are exact
select * from jobctl.recount_counters(fix => true);';
