-- jobctl._retire_partitions: pg_partman's maintenance of jobctl.job and jobctl._event (partitions
-- made ahead; those past the hot retention detached into schema jobctl_archive), then, in the same
-- transaction so that no reader or writer sees a gap, each detached job partition's unfinished jobs
-- carried over into the hot default partition (no partition covers their day any more; their ids,
-- created_at and queue rows stay as they were) and the partition attached to jobctl.job_archive or
-- jobctl._event_archive (no scan when it is sealed: see jobctl._partitions). Jobs carried over
-- earlier that have finished since go to the archive the same way, with their events.
-- Called by jobctl.maintain_partitions only: it holds ACCESS EXCLUSIVE on the hot parents from the
-- detach to the caller's commit. Writes: job, job_archive, _event_archive (and _event_default).
create or replace function jobctl._retire_partitions(p_partman text, p_hot interval)
returns void
language plpgsql
as $$
declare
    v_parts jobctl._partition[];
    v_part record;
    v_unfinished bigint[];
    v_moved bigint[];
    v_finished jsonb;  -- [{tenant_id, queue, part, dead, completed, cancelled}]
begin
    -- a detached table has no bounds any more: note them first
    select array_agg(p) into v_parts
    from jobctl._partitions(array['jobctl.job', 'jobctl._event']::regclass[]) as p;
    -- an unfinished job has a row in _ready, _delayed, _running, _held or _waiting: note those of the days that may
    -- retire before any lock is taken (a scan of the queue tables, not of the days' jobs, which
    -- would run while the hot parent is locked); a retry made after this is found below
    select array_agg(x.job_id) into v_unfinished
    from (
        select r.job_id from jobctl._ready as r where r.created_at < now() - p_hot + interval '1 day'
        union all
        select d.job_id from jobctl._delayed as d where d.created_at < now() - p_hot + interval '1 day'
        union all
        select r.job_id from jobctl._running as r where r.created_at < now() - p_hot + interval '1 day'
        union all
        select h.job_id from jobctl._held as h where h.created_at < now() - p_hot + interval '1 day'
        union all
        select w.job_id from jobctl._waiting as w where w.created_at < now() - p_hot + interval '1 day'
    ) as x;
    -- the finished jobs of the days that may retire leave the counters' hot gauges:
    -- counted here, before any lock (a scan of those days), and taken off once their partition has
    -- gone to the archive below
    select jsonb_agg(x) into v_finished
    from (
        select j.tenant_id, j.queue, j.tableoid::bigint as part,  -- (an oid: detaching renames the schema)
            count(*) filter (where j.state = 'dead') as dead, count(*) filter (where j.state = 'completed') as completed,
            count(*) filter (where j.state = 'cancelled') as cancelled
        from jobctl.job as j
        where j.created_at < now() - p_hot + interval '1 day' and j.state in ('dead', 'completed', 'cancelled')
            and j.tableoid <> 'jobctl.job_default'::regclass
        group by 1, 2, 3
    ) as x;
    execute format(
        'update %I.part_config set retention = %L where parent_table in (%L, %L) and retention is distinct from %L',
        p_partman, p_hot::text, 'jobctl.job', 'jobctl._event', p_hot::text
    );
    execute format('select %I.run_maintenance(p_parent_table => %L, p_jobmon => false)', p_partman, 'jobctl.job');
    execute format('select %I.run_maintenance(p_parent_table => %L, p_jobmon => false)', p_partman, 'jobctl._event');

    for v_part in
        select p.* from unnest(v_parts) as p
        inner join pg_catalog.pg_class as c on c.oid = p.part
        where c.relnamespace = 'jobctl_archive'::regnamespace and not c.relispartition
        order by p.lower_bound
    loop
        if v_part.parent = 'jobctl.job'::regclass then
            -- those noted, and those retried since (retry_job writes a 'retried' event): primary-key
            -- probes, not a scan of the day
            execute format(
                'with gone as (
                     delete from %s as j
                     where (j.job_id = any($1) or j.job_id = any(array(
                             select e.job_id from %s as e where e.event = ''retried'')))
                         and j.state in (''pending'', ''running'', ''failed'', ''waiting'')
                     returning j.*
                 )
                 insert into jobctl.job select * from gone',
                v_part.part,
                coalesce((
                    select e.part::text from unnest(v_parts) as e
                    where e.parent = 'jobctl._event'::regclass and e.lower_bound = v_part.lower_bound
                ), 'jobctl._event')
            ) using coalesce(v_unfinished, '{}');
        end if;
        if v_part.parent = 'jobctl.job'::regclass then
            insert into jobctl._stat_delta (tenant_id, queue, dead, completed, cancelled)
            select f.tenant_id, f.queue, -sum(f.dead), -sum(f.completed), -sum(f.cancelled)
            from jsonb_to_recordset(v_finished) as f (
                tenant_id text, queue text, part bigint, dead bigint, completed bigint, cancelled bigint
            )
            where f.part = v_part.part::oid::bigint
            group by f.tenant_id, f.queue;
        end if;
        execute format(
            'alter table %s attach partition %s for values from (%L) to (%L)',
            case v_part.parent when 'jobctl.job'::regclass then 'jobctl.job_archive' else 'jobctl._event_archive' end,
            v_part.part, v_part.lower_bound, v_part.upper_bound
        );
    end loop;

    -- jobs carried over that have finished since, and their events
    with gone as (
        delete from jobctl.job_default as j
        where j.created_at < now() - p_hot and j.state in ('completed', 'dead', 'cancelled')
        returning j.*
    ),
    kept as (
        insert into jobctl.job_archive select * from gone
        returning job_id
    ),
    tally as (
        insert into jobctl._stat_delta (tenant_id, queue, dead, completed, cancelled)
        select g.tenant_id, g.queue, -count(*) filter (where g.state = 'dead'),
            -count(*) filter (where g.state = 'completed'), -count(*) filter (where g.state = 'cancelled')
        from gone as g
        group by g.tenant_id, g.queue
    )
    select array_agg(k.job_id) into v_moved from kept as k;
    if v_moved is not null then
        with gone as (
            delete from jobctl._event_default as e where e.job_id = any(v_moved) returning e.*
        )
        insert into jobctl._event_archive select * from gone;
    end if;
end
$$;
