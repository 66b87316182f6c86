-- jobctl.queue_overview: a page of the queues list (the dashboard's /queues, GET /api/v1/queues),
-- in name order after `after`, at most max_rows: every queue with settings or with jobs not finished
-- (pending, delayed, retrying, running, waiting, dead) in any tenant, its settings and its depth by
-- state summed over the tenants, claims a second over the window and its oldest due job. A drained
-- queue (only completed or cancelled jobs left) without settings is not listed. For callers acting
-- for every tenant (queues are shared). From the counters (jobctl.job_counts): no scan of the jobs.
create or replace function jobctl.queue_overview(
    after text default null, max_rows integer default 100, "window" interval default '5 minutes'
)
returns table (
    queue text, paused boolean, max_running integer, claim_rate numeric, claim_burst integer, configured boolean,
    pending bigint, delayed bigint, retrying bigint, running bigint, dead bigint, waiting bigint,
    claims_per_second double precision, oldest_due_at timestamptz
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_column
declare
    v_since timestamptz;
begin
    perform jobctl._require_every_tenant('queues:read', 'the list of queues');
    if max_rows is null or max_rows not between 1 and 1000 then
        raise exception using errcode = 'JC001',
            message = format('max_rows must be between 1 and 1000, not %s', coalesce(max_rows::text, 'NULL')),
            detail = 'field: max_rows';
    end if;
    v_since := jobctl._stat_since(queue_overview."window");
    return query
    with depth as (
        select c.queue, sum(c.pending)::bigint as pending, sum(c.delayed)::bigint as delayed,
            sum(c.retrying)::bigint as retrying, sum(c.running)::bigint as running, sum(c.dead)::bigint as dead,
            sum(c.waiting)::bigint as waiting, min(c.oldest_due_at) as oldest_due_at
        from jobctl.job_counts() as c
        where queue_overview.after is null or c.queue > queue_overview.after
        group by c.queue
        having sum(c.pending + c.delayed + c.retrying + c.running + c.dead + c.waiting) > 0
    ),
    page as (
        select coalesce(q.queue, d.queue) as queue, q.paused, q.max_running, q.claim_rate, q.claim_burst,
            q.updated_at is not null as configured, d.pending, d.delayed, d.retrying, d.running, d.dead, d.waiting,
            d.oldest_due_at
        from (select x.* from jobctl.queue as x where queue_overview.after is null or x.queue > queue_overview.after)
            as q
        full join depth as d on d.queue = q.queue
        order by 1
        limit max_rows
    ),
    rates as (
        select r.queue, sum(r.claimed) as claimed
        from jobctl.job_rates(v_since) as r
        where r.queue in (select p.queue from page as p)
        group by r.queue
    )
    select p.queue, coalesce(p.paused, false), p.max_running, p.claim_rate, p.claim_burst, coalesce(p.configured, false),
        coalesce(p.pending, 0), coalesce(p.delayed, 0), coalesce(p.retrying, 0), coalesce(p.running, 0),
        coalesce(p.dead, 0), coalesce(p.waiting, 0),
        coalesce(w.claimed, 0) / extract(epoch from now() - v_since)::double precision, p.oldest_due_at
    from page as p
    left join rates as w on w.queue = p.queue
    order by p.queue;
end
$$;

comment on function jobctl.queue_overview(text, integer, interval) is
'A page of the queues, in name order after `after` (NULL: from the first), at most max_rows (1..1000, default
100): every queue with settings or with jobs not finished in any tenant (a drained queue without settings is not
listed), its settings (configured: put_queue gave it some), its jobs by state summed over the tenants (pending,
delayed, retrying, running, dead, waiting), claims a second over the window (default 5 minutes) and the run_at of
its oldest due job. The next page starts after the last queue. Queues are shared by every tenant: only a caller
acting for every tenant may list them. From the counters.
Errors: 42501 the caller does not act for every tenant, JC001 max_rows not in 1..1000.
Example:
select queue, pending, running, claims_per_second from jobctl.queue_overview(max_rows => 50);';
