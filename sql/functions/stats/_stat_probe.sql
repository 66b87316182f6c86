-- jobctl._stat_probe: probe up to p_lanes lanes with due jobs for their oldest due job
-- (jobctl._oldest_due), those probed longest ago first, and keep the answer in jobctl._stat for
-- job_counts; at most once a 100 ms however many ticks run (jobctl._stat_probed), so the probes
-- cost at most p_lanes x 10 index probes a second. A lane's answer is thus as old as the number of
-- busy lanes / (p_lanes x 10) seconds at most (1 s up to 1,000 lanes). jobctl.tick calls it, under
-- its lock, after the fold. Reads first: an idle database's tick (no busy lane) writes nothing.
-- Writes: _stat (HOT updates), _stat_probed.
create or replace function jobctl._stat_probe(p_lanes integer default 100)
returns integer
language plpgsql
as $$
declare
    v_n integer;
begin
    if not exists (select from jobctl._stat as s where s.pending > 0)
       or not exists (select from jobctl._stat_probed as p where p.at < clock_timestamp() - interval '100 milliseconds') then
        return 0;
    end if;
    update jobctl._stat_probed as p set at = clock_timestamp()
    where p.at < clock_timestamp() - interval '100 milliseconds';
    if not found then
        return 0;
    end if;
    update jobctl._stat as s
    set oldest_due_at = jobctl._oldest_due(s.queue, s.tenant_id), probed_at = clock_timestamp()
    from (
        select x.tenant_id, x.queue from jobctl._stat as x
        where x.pending > 0
        order by x.probed_at nulls first
        limit p_lanes
    ) as l
    where s.tenant_id = l.tenant_id and s.queue = l.queue;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;
