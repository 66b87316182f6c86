-- jobctl.await_event: the payload of the job's tenant's event, or the job parked until it comes.
-- Steps: the fence (the job's _running row under lease_epoch); an outcome saved earlier (step
-- event:<name>) answers again; otherwise the event's lock, then, in new statements that see every
-- emit committed before the lock was granted: an emitted event is received, a wait whose timeout
-- has passed has timed out (either is saved as the step, under the lease's KEY SHARE lock), and
-- anything else parks the job (jobctl._park) due at the timeout, with an _awaiting row that
-- emit_event, which takes the same lock, finds. So an emit racing the wait is never lost: the one
-- that gets the lock second sees what the first committed. A wait with no timeout is due at
-- 9999-01-01 (never; a timestamp every client reads).
-- Calls: _acting_tenants, _wait_lock, _save_step, _park. Locks: the event's _tenant_lock row, then
-- the _running row (KEY SHARE, or deleted), then the job row (_park).
-- Writes: _step (insert) and _awaiting (delete), or _running (delete), _awaiting (insert) and
-- through _park job, _event, _delayed, _stat_delta.
create or replace function jobctl.await_event(job_id bigint, lease_epoch bigint, event text, timeout interval default null)
returns table (outcome text, payload jsonb)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
declare
    v_run jobctl._running;
    v_step text := 'event:' || await_event.event;
    v_saved jsonb;
    v_wait jobctl._awaiting;
    v_until timestamptz;
begin
    if await_event.job_id is null or await_event.lease_epoch is null then
        raise exception using errcode = 'JC001', message = 'job_id and lease_epoch must not be NULL';
    end if;
    perform jobctl._event_check(await_event.event);
    if await_event.timeout <= interval '0' or await_event.timeout > interval '1 year' then
        raise exception using errcode = 'JC001',
            message = format('timeout must be positive and at most 1 year, not %s', await_event.timeout),
            detail = 'field: timeout', hint = 'NULL waits with no timeout.';
    end if;
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception using errcode = 'JC007',
            message = format('await_event needs READ COMMITTED isolation, not %s', upper(current_setting('transaction_isolation'))),
            hint = 'Call it in autocommit mode or in a READ COMMITTED transaction.';
    end if;
    select r.* into v_run from jobctl._running as r
    where r.job_id = await_event.job_id and r.lease_epoch = await_event.lease_epoch
        and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]));  -- (another tenant's: fenced)
    if not found then
        return query select 'fenced'::text, null::jsonb;
        return;
    end if;
    select s.result into v_saved from jobctl._step as s where s.job_id = v_run.job_id and s.step = v_step;
    if found then
        return query select v_saved ->> 'outcome', nullif(v_saved -> 'payload', 'null');
        return;
    end if;

    perform jobctl._wait_lock('event', array[v_run.tenant_id], array[await_event.event]);
    select jsonb_build_object('outcome', 'received', 'payload', e.payload) into v_saved
    from jobctl._emitted as e where e.tenant_id = v_run.tenant_id and e.event = await_event.event;
    select * into v_wait from jobctl._awaiting as a where a.job_id = v_run.job_id and a.event = await_event.event;
    if v_saved is null and v_wait.timeout_at <= clock_timestamp() then
        v_saved := '{"outcome": "timed_out"}';
    end if;
    if v_saved is not null then
        perform from jobctl._running as r
        where r.job_id = v_run.job_id and r.lease_epoch = v_run.lease_epoch
        for key share;
        if not found then
            return query select 'fenced'::text, null::jsonb;
            return;
        end if;
        perform jobctl._save_step(v_run, v_step, v_saved);
        delete from jobctl._awaiting as a where a.job_id = v_run.job_id and a.event = await_event.event;
        return query select v_saved ->> 'outcome', nullif(v_saved -> 'payload', 'null');
        return;
    end if;

    -- a wait woken before its time (an emit of another call, an operator) keeps its first timeout
    v_until := coalesce(v_wait.timeout_at, clock_timestamp() + await_event.timeout, '9999-01-01 00:00:00+00');
    delete from jobctl._running as r
    where r.job_id = v_run.job_id and r.lease_epoch = v_run.lease_epoch
    returning * into v_run;
    if not found then
        return query select 'fenced'::text, null::jsonb;
        return;
    end if;
    insert into jobctl._awaiting (job_id, event, tenant_id, job_created_at, run_at, timeout_at)
    values (v_run.job_id, await_event.event, v_run.tenant_id, v_run.created_at, v_until,
        coalesce(v_wait.timeout_at, clock_timestamp() + await_event.timeout))
    on conflict on constraint _awaiting_pkey do update set run_at = excluded.run_at;
    perform jobctl._park(v_run, v_until, 'event', await_event.event);
    return query select 'suspended'::text, null::jsonb;
end
$$;

comment on function jobctl.await_event(bigint, bigint, text, interval) is
'The payload of event, emitted by the tenant of the job running under lease_epoch (emit_event):
outcome received with the payload when the tenant has emitted it (at once if it already had); otherwise
suspended: the lease ends as in sleep_job and the job waits, pending, until the event is emitted (then due at
once) or timeout passes (then due; NULL: no timeout). Called again by the resumed attempt, it answers received
(with the payload) or timed_out, and keeps answering so for that job (the outcome is saved as the step
event:<event>). fenced when the job is not running under that epoch: nothing changed. An emit racing the wait
is never lost. Bounds: event 1 to 200 printable characters; timeout positive, at most 1 year. Needs READ
COMMITTED.
Errors: JC001 NULL job_id or lease_epoch, event or timeout out of bounds, JC007 another isolation level.
Example:
select * from jobctl.await_event(42, 7, ''order-1/approved'', interval ''1 day'');';
