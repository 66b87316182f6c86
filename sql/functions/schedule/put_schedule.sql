-- jobctl.put_schedule: create or replace a recurring schedule. Its first run is the expression's
-- next fire time after now; replacing a schedule keeps its next fire time unless the expression
-- changed. catch_up: after downtime, at most this many missed runs (the latest) are enqueued;
-- 1 (the default) means one run stands for the whole missed window. skip_overlap: a run is
-- skipped while the schedule's previous run is unfinished (pending, failed with a retry, running).
-- NULL priority, catch_up or skip_overlap means its default (as max_attempts does for submit_job).
-- time_zone: the zone whose wall time the expression reads (jobctl._time_zone; NULL: UTC); a
-- schedule whose expression or zone changes starts again from its next fire time.
-- A tenant has at most 100 schedules. Locks: the tenant row (FOR NO KEY UPDATE), to count them.
-- Writes: tenant (an unknown tenant is registered), schedule.
create or replace function jobctl.put_schedule(
    tenant_id text,
    name text,
    cron text,
    queue text,
    payload jsonb,
    priority integer default 0,
    catch_up integer default 1,
    skip_overlap boolean default false,
    time_zone text default 'UTC'
)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_priority integer := coalesce(priority, 0);
    v_catch_up integer := coalesce(catch_up, 1);
    v_skip_overlap boolean := coalesce(skip_overlap, false);
    v_zone text;
    v_field text;
    v_next timestamptz;
    v_value text;
begin
    perform jobctl._require_tenant(tenant_id, 'schedules:write');
    v_field := case
        when tenant_id is null or tenant_id = '' or length(tenant_id) > 200 or tenant_id ~ jobctl._unprintable()
            then 'tenant_id'
        when name is null or name = '' or length(name) > 200 or name ~ jobctl._unprintable() then 'name'
        when cron is null or length(cron) > 200 then 'cron'
        when queue is null or queue = '' or length(queue) > 200 or queue ~ jobctl._unprintable() then 'queue'
        when payload is null or payload = 'null'::jsonb or octet_length(payload::text) > 65536
            or payload ? '$jobctl_sealed' or jobctl._too_deep(payload) then 'payload'
        when v_priority not between -100 and 100 then 'priority'
        when v_catch_up not between 1 and 1000 then 'catch_up'
    end;
    if v_field is not null then
        v_value := case v_field when 'tenant_id' then tenant_id when 'name' then name when 'queue' then queue end;
        raise exception using errcode = 'JC001',
            message = case
                when v_field in ('tenant_id', 'name', 'queue') and v_value ~ jobctl._unprintable()
                    then format('%s must not contain control characters', v_field)
                when v_field = 'payload' and jobctl._too_deep(payload) then 'payload is nested more than 100 levels deep'
                else format('%s is missing or out of range', v_field)
            end,
            detail = format('field: %s', v_field),
            hint = 'tenant_id, name, queue: 1-200 characters, no control characters; cron: up to 200; '
                'payload: JSON up to 64 KiB and 100 levels deep; priority -100..100; catch_up 1..1000.';
    end if;
    v_zone := jobctl._time_zone(time_zone);
    -- each schedule's runs are submits its tenant makes a few times a second at most: a tenant
    -- holds at most 100 (docs/security.md, Bounds); the tenant row's lock makes the count exact
    -- under concurrent puts
    insert into jobctl.tenant as t (tenant_id) values (tenant_id) on conflict do nothing;
    perform from jobctl.tenant as t where t.tenant_id = put_schedule.tenant_id for no key update;
    if (select count(*) from jobctl.schedule as s
        where s.tenant_id = put_schedule.tenant_id and s.name <> put_schedule.name) >= 100 then
        raise exception using errcode = 'JC001',
            message = format('tenant %s has 100 schedules, the most a tenant may have', tenant_id),
            detail = 'field: name',
            hint = 'Drop a schedule first (jobctl.drop_schedule), or use one schedule whose job fans out.';
    end if;
    -- (the clock, not the transaction's start; this also validates the expression, JC001 naming the field)
    v_next := jobctl._cron_walk(cron, clock_timestamp(), false, v_zone);

    insert into jobctl.schedule as s (
        tenant_id, name, cron, queue, payload, priority, catch_up, skip_overlap, next_fire_at, time_zone
    )
    values (tenant_id, name, cron, queue, payload, v_priority, v_catch_up, v_skip_overlap, v_next, v_zone)
    on conflict on constraint schedule_pkey do update
    set cron = excluded.cron,
        queue = excluded.queue,
        payload = excluded.payload,
        priority = excluded.priority,
        catch_up = excluded.catch_up,
        skip_overlap = excluded.skip_overlap,
        time_zone = excluded.time_zone,
        -- a new expression or zone starts after the last fire time enqueued, so none is enqueued twice
        next_fire_at = case when s.cron = excluded.cron and s.time_zone = excluded.time_zone then s.next_fire_at
            else jobctl._cron_walk(excluded.cron, greatest(clock_timestamp(), s.last_fire_at), false, excluded.time_zone) end,
        updated_at = now();
end
$$;

comment on function jobctl.put_schedule(text, text, text, text, jsonb, integer, integer, boolean, text) is
'Create or replace a recurring schedule: each fire time of `cron` (see cron_next), read in the wall
time of time_zone (a pg_timezone_names name, default UTC), enqueues one job (queue, payload, priority; run_at =
the fire time; the job records the schedule and fire time), exactly once however many expanders run. catch_up
(1..1000, default 1): after downtime at most that many missed runs, the latest; skip_overlap: skip a run while the
previous one is unfinished. NULL priority, catch_up or skip_overlap: the default. A tenant holds at most 100
schedules.
Errors: JC001 naming the field (for cron: the bad cron field; time_zone: not a zone name), 42501 another tenant.
Example:
select jobctl.put_schedule(''acme'', ''nightly-report'', ''0 2 * * *'', ''reports'', ''{"kind": "daily"}'');
select jobctl.put_schedule(''acme'', ''poll-feed'', ''@every 15 seconds'', ''feeds'', ''{}'', skip_overlap => true);
select jobctl.put_schedule(''acme'', ''berlin-report'', ''30 7 * * mon-fri'', ''reports'', ''{}'', time_zone => ''Europe/Berlin'');';
