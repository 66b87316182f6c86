-- jobctl._stat_fold: fold the counters' deltas into the totals (jobctl._stat) and
-- the per-minute rows (jobctl._stat_minute), at most p_limit deltas, in one statement: readers see
-- each delta either still in _stat_delta or in the totals, never both. jobctl.tick calls it under
-- its lock, so one fold runs at a time. Writes: _stat_delta (delete), _stat, _stat_minute.
-- Returns the number of deltas folded.
create or replace function jobctl._stat_fold(p_limit integer default 100000)
returns integer
language plpgsql
as $$
declare
    v_n integer;
begin
    with gone as (
        delete from jobctl._stat_delta as d
        where d.ctid = any(array(select x.ctid from jobctl._stat_delta as x limit p_limit))
        returning d.*
    ),
    totals as (
        insert into jobctl._stat as s (
            tenant_id, queue, pending, delayed, retrying, running, dead, completed, cancelled, submitted,
            claimed, succeeded, failed, died, withdrawn, retried, fenced, wait_buckets, wait_seconds,
            run_buckets, run_seconds, waiting
        )
        select g.tenant_id, g.queue, coalesce(sum(g.pending), 0), coalesce(sum(g.delayed), 0),
            coalesce(sum(g.retrying), 0), coalesce(sum(g.running), 0), coalesce(sum(g.dead), 0),
            coalesce(sum(g.completed), 0), coalesce(sum(g.cancelled), 0), coalesce(sum(g.submitted), 0),
            coalesce(sum(g.claimed), 0), coalesce(sum(g.succeeded), 0), coalesce(sum(g.failed), 0),
            coalesce(sum(g.died), 0), coalesce(sum(g.withdrawn), 0), coalesce(sum(g.retried), 0),
            coalesce(sum(g.fenced), 0),
            jobctl._stat_hist(array_agg(g.wait_bucket), array_agg(g.claimed::bigint)),
            coalesce(sum(g.wait_seconds), 0),
            jobctl._stat_hist(array_agg(g.run_bucket), array_agg(coalesce(g.succeeded, 0)::bigint + coalesce(g.failed, 0))),
            coalesce(sum(g.run_seconds), 0), coalesce(sum(g.waiting), 0)
        from gone as g
        group by g.tenant_id, g.queue
        on conflict (tenant_id, queue) do update
        set pending = s.pending + excluded.pending, delayed = s.delayed + excluded.delayed,
            waiting = s.waiting + excluded.waiting,
            -- an emptied lane forgets its oldest due job (a probe finds the next one)
            oldest_due_at = case when s.pending + excluded.pending > 0 then s.oldest_due_at end,
            retrying = s.retrying + excluded.retrying, running = s.running + excluded.running,
            dead = s.dead + excluded.dead, completed = s.completed + excluded.completed,
            cancelled = s.cancelled + excluded.cancelled, submitted = s.submitted + excluded.submitted,
            claimed = s.claimed + excluded.claimed, succeeded = s.succeeded + excluded.succeeded,
            failed = s.failed + excluded.failed, died = s.died + excluded.died,
            withdrawn = s.withdrawn + excluded.withdrawn, retried = s.retried + excluded.retried,
            fenced = s.fenced + excluded.fenced,
            wait_buckets = jobctl._stat_add(s.wait_buckets, excluded.wait_buckets),
            wait_seconds = s.wait_seconds + excluded.wait_seconds,
            run_buckets = jobctl._stat_add(s.run_buckets, excluded.run_buckets),
            run_seconds = s.run_seconds + excluded.run_seconds
    ),
    minutes as (
        insert into jobctl._stat_minute as s (
            minute, tenant_id, queue, submitted, claimed, succeeded, failed, died, fenced, wait_buckets,
            wait_seconds, run_buckets, run_seconds
        )
        select date_trunc('minute', g.at), g.tenant_id, g.queue, coalesce(sum(g.submitted), 0),
            coalesce(sum(g.claimed), 0), coalesce(sum(g.succeeded), 0), coalesce(sum(g.failed), 0),
            coalesce(sum(g.died), 0), coalesce(sum(g.fenced), 0),
            jobctl._stat_hist(array_agg(g.wait_bucket), array_agg(g.claimed::bigint)),
            coalesce(sum(g.wait_seconds), 0),
            jobctl._stat_hist(array_agg(g.run_bucket), array_agg(coalesce(g.succeeded, 0)::bigint + coalesce(g.failed, 0))),
            coalesce(sum(g.run_seconds), 0)
        from gone as g
        -- (rows that only move gauges add nothing to a minute)
        where coalesce(g.submitted, g.claimed, g.succeeded, g.failed, g.died, g.fenced) is not null
        group by 1, 2, 3
        on conflict (minute, tenant_id, queue) do update
        set submitted = s.submitted + excluded.submitted, claimed = s.claimed + excluded.claimed,
            succeeded = s.succeeded + excluded.succeeded, failed = s.failed + excluded.failed,
            died = s.died + excluded.died, fenced = s.fenced + excluded.fenced,
            wait_buckets = jobctl._stat_add(s.wait_buckets, excluded.wait_buckets),
            wait_seconds = s.wait_seconds + excluded.wait_seconds,
            run_buckets = jobctl._stat_add(s.run_buckets, excluded.run_buckets),
            run_seconds = s.run_seconds + excluded.run_seconds
    )
    select count(*) into v_n from gone;
    return v_n;
end
$$;
