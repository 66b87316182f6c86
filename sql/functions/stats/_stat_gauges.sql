-- jobctl._stat_gauges: the counters' pending (due) and running jobs per tenant and queue, folded
-- totals plus the deltas not yet folded (jobctl.job_counts without its events, histograms and
-- oldest due job): what list_queues and fairness need, at a sum per lane.
create or replace function jobctl._stat_gauges()
returns table (tenant_id text, queue text, pending bigint, running bigint)
language sql
stable
as $$
    select g.tenant_id, g.queue, sum(g.pending)::bigint, sum(g.running)::bigint
    from (
        select s.tenant_id, s.queue, s.pending, s.running from jobctl._stat as s
        union all
        select d.tenant_id, d.queue, d.pending, d.running from jobctl._stat_delta as d
        where d.pending is not null or d.running is not null
    ) as g
    group by g.tenant_id, g.queue
$$;
