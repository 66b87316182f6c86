-- jobctl.expand_schedules: enqueue the due runs of every due schedule; returns how many.
-- Called by jobctl.tick (workers: a few times a second, when a schedule is due; pg_cron: every
-- minute), so runs start within about a second of their fire time while workers run. A pass takes
-- at most 1,000 schedules, tenant by tenant (each tenant's earliest due first, then each one's
-- second, ...), so one tenant's many schedules do not delay another's. Each schedule
-- row is locked (SKIP LOCKED: racing expanders share the work, never the same row) and moved past
-- its enqueued fire times in the same transaction: each fire time is enqueued once. A fire time
-- more than 90 s old when expanded was missed (the expanders were down); of the missed ones only
-- the latest catch_up are enqueued, the on-time ones all are. With skip_overlap a run is skipped
-- while the schedule's previous run is unfinished. A run over its tenant's submit rate, or failing
-- otherwise (logged as a warning), stays due for a later expansion. A paused schedule is skipped
-- (jobctl.pause_schedule; resume_schedule moves its next fire time past the pause). Does nothing on
-- a standby. The fire times are those of the expression in the schedule's time zone; each job
-- records its schedule and fire time (jobctl.schedule_runs).
-- Locks: schedule rows. Writes: schedule, and through jobctl._submit job, _ready, _delayed.
create or replace function jobctl.expand_schedules()
returns integer
language plpgsql
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_missed_before timestamptz := clock_timestamp() - interval '90 seconds';
    v_s jobctl.schedule;
    v_due record;
    v_fires timestamptz[];
    v_t timestamptz;
    v_busy boolean;
    v_job bigint;
    v_spec jobctl._job_spec;  -- a run: its schedule's tenant, queue, payload and priority at its fire time
    v_fire timestamptz;
    v_done integer;
    v_n integer := 0;
begin
    if pg_is_in_recovery() then
        return 0;
    end if;
    for v_due in
        -- tenant by tenant: every tenant's earliest due schedule, then every tenant's second, ...
        select d.tenant_id, d.name
        from (
            select d.tenant_id, d.name, d.next_fire_at,
                row_number() over (partition by d.tenant_id order by d.next_fire_at, d.name) as turn
            from jobctl.schedule as d
            where d.next_fire_at <= v_now and not d.paused
        ) as d
        order by d.turn, d.next_fire_at
        limit 1000
    loop
        -- locked in a statement of its own, whose snapshot sees what a racing expander committed:
        -- a schedule it moved on is no longer due, one it holds is skipped
        select * into v_s from jobctl.schedule as s
        where s.tenant_id = v_due.tenant_id and s.name = v_due.name and s.next_fire_at <= v_now and not s.paused
        for update skip locked;
        continue when not found;
        -- the latest catch_up missed fire times (walking back from the cut-off), oldest first
        v_fires := '{}';
        v_t := v_missed_before;
        while v_s.next_fire_at < v_t and cardinality(v_fires) < v_s.catch_up loop
            v_t := jobctl._cron_walk(v_s.cron, v_t, true, v_s.time_zone);
            exit when v_t < v_s.next_fire_at;
            v_fires := v_t || v_fires;
        end loop;
        -- then every on-time one; v_t ends on the first fire time still to come
        v_t := case when v_s.next_fire_at >= v_missed_before then v_s.next_fire_at
            else jobctl._cron_walk(v_s.cron, v_missed_before - interval '1 microsecond', false, v_s.time_zone) end;
        while v_t <= v_now loop
            v_fires := v_fires || v_t;
            v_t := jobctl._cron_walk(v_s.cron, v_t, false, v_s.time_zone);
        end loop;

        v_busy := v_s.skip_overlap and exists (
            select from jobctl.job as j
            where j.job_id = v_s.last_job_id and j.created_at = v_s.last_job_created_at
                and j.state in ('pending', 'failed', 'running')
        );
        if v_busy then
            v_fires := '{}';
        elsif v_s.skip_overlap then
            v_fires := v_fires[1:1];  -- the runs after it would overlap it
        end if;
        -- one run at a time: a run that cannot be submitted (over its tenant's submit rate, or any
        -- other error) stays due for the next expansion, and claims go on (a subtransaction per
        -- run, only as a schedule fires)
        v_done := 0;
        v_spec.tenant_id := v_s.tenant_id;
        v_spec.queue := v_s.queue;
        v_spec.payload := v_s.payload;
        v_spec.priority := v_s.priority;
        foreach v_fire in array v_fires loop
            v_spec.run_at := v_fire;
            begin
                select s.job_id into v_job
                from jobctl._submit(array[v_spec], false, p_caller => false, p_schedule => v_s.name, p_fire_time => v_fire) as s;
            exception when others then
                if sqlstate <> 'JC005' then
                    -- to the server log: the worker whose tick expands it may serve other tenants
                    raise log 'schedule % of tenant % could not enqueue its run at %: %',
                        v_s.name, v_s.tenant_id, v_fire, sqlerrm;
                end if;
                v_t := v_fire;
                exit;
            end;
            v_done := v_done + 1;
        end loop;
        v_fires := v_fires[1:v_done];
        v_n := v_n + v_done;
        update jobctl.schedule as s
        set next_fire_at = v_t,
            last_fire_at = case when cardinality(v_fires) > 0 then v_fires[cardinality(v_fires)] else s.last_fire_at end,
            last_job_id = case when cardinality(v_fires) > 0 then v_job else s.last_job_id end,
            last_job_created_at = case when cardinality(v_fires) > 0 then now() else s.last_job_created_at end
        where s.tenant_id = v_s.tenant_id and s.name = v_s.name;
    end loop;
    return v_n;
end
$$;

comment on function jobctl.expand_schedules() is
'Enqueue the due runs of every due schedule, each fire time once however many callers
race; returns how many. Workers call it a few times a second and pg_cron every minute, through tick. A fire time
over 90 s old was missed: only the schedule''s latest catch_up missed runs are enqueued. A run that cannot be
enqueued (over its tenant''s submit rate, or any other error) stays due for the next call; errors other than the
rate go to the server log. Paused schedules are skipped. Does nothing on a standby.
Errors: none.
Example:
select jobctl.expand_schedules();';
