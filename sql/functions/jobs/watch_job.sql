-- jobctl.watch_job: register the caller as a watcher for a job of its tenants and return the job
-- as get_job does. The caller LISTENs on channel first; when the job finishes (complete, death,
-- cancel), jobctl._notify_watchers sends NOTIFY <channel>, '<job_id>' and removes the watcher. A job
-- already finished, unknown or another tenant's registers nothing. The hint may be missed (a
-- finish that commits while this call commits, a listener that reconnected): callers poll as well.
-- Bounds: channel 'jobctl_wait_' and 32 lowercase hex digits (a random name no other login can
-- guess, so none can hear the hint); wait in (0, 1 hour]; 100 watchers a job, 10,000 a tenant.
-- Locks: the job's watcher row of _tenant_lock (jobctl._wait_lock 'watcher', bucket of the job id), so
-- concurrent callers count and insert a job's watchers one at a time and cannot pass 100 together; a
-- tenant with 9,000 watchers or more also takes its one 'watchers' row, so the last 1,000 places go one
-- caller at a time (rows only the owner can lock: docs/security.md, Locks; never an advisory lock).
-- Writes: _watcher (insert), _tenant_lock (first use). Reads: job (every partition's primary key),
-- _watcher (the caps).
create or replace function jobctl.watch_job(job_id bigint, channel text, wait interval default '5 minutes')
returns setof jobctl.job_info
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_job jobctl.job_info;
    v_watchers bigint;
begin
    if channel is null or channel !~ '^jobctl_wait_[0-9a-f]{32}$' then
        raise exception using errcode = 'JC001',
            message = 'channel must be ''jobctl_wait_'' followed by 32 lowercase hex digits',
            detail = 'field: channel',
            hint = 'Choose it at random (e.g. secrets.token_hex(16)) and LISTEN on it before the call.';
    end if;
    if wait is null or wait <= interval '0' or wait > interval '1 hour' then
        raise exception using errcode = 'JC001',
            message = 'wait must be more than 0 and at most 1 hour',
            detail = 'field: wait',
            hint = 'Call watch_job again to wait longer.';
    end if;
    -- as get_job reads it: another tenant's job is as unknown as a missing one
    select * into v_job from jobctl.get_job(watch_job.job_id);
    if not found then
        return;
    end if;
    if v_job.state in ('completed', 'dead', 'cancelled') then
        return next v_job;
        return;
    end if;
    -- held to the commit: the next caller for this job counts after this one's watcher is in
    perform jobctl._wait_lock('watcher', array[v_job.tenant_id], array[v_job.job_id::text]);
    select count(*) into v_watchers from jobctl._watcher as w where w.job_id = watch_job.job_id;
    if v_watchers >= 100 then
        raise exception using errcode = 'JC004',
            message = format('job %s already has %s watchers, the most', watch_job.job_id, v_watchers),
            detail = format(E'field: job_id\nwatchers: %s\nretry_after: 1', v_watchers),
            hint = 'Share one watcher (one LISTEN channel) between the callers waiting for this job.';
    end if;
    select count(*) into v_watchers
    from (select from jobctl._watcher as w where w.tenant_id = v_job.tenant_id limit 10000) as w;
    if v_watchers >= 9000 then
        -- near the bound: count again under the tenant's own lock (after the job's: no deadlock), so
        -- passing 10,000 would take more than 1,000 of the tenant's callers at the same instant
        perform jobctl._wait_lock('watchers', array[v_job.tenant_id], array['tenant']);
        select count(*) into v_watchers
        from (select from jobctl._watcher as w where w.tenant_id = v_job.tenant_id limit 10000) as w;
    end if;
    if v_watchers >= 10000 then
        raise exception using errcode = 'JC004',
            message = format('tenant %s already has 10000 watchers, the most', v_job.tenant_id),
            detail = E'field: tenant_id\nwatchers: 10000\nretry_after: 1',
            hint = 'Watchers leave when their job finishes or their wait runs out.';
    end if;
    insert into jobctl._watcher (job_id, tenant_id, channel, expires_at)
    values (v_job.job_id, v_job.tenant_id, channel, clock_timestamp() + wait);
    -- read it again: a finish that committed since the read above did not see the watcher
    select * into v_job from jobctl.get_job(watch_job.job_id);
    if found then
        return next v_job;
    end if;
end
$$;

comment on function jobctl.watch_job(bigint, text, interval) is
'Wait for a job of the caller''s tenants: returns the job as get_job does and, unless it is finished
(completed, dead, cancelled) already, registers the caller for a hint on its finish: NOTIFY
<channel>, ''<job_id>'' when the job completes, dies or is cancelled, or nothing once `wait` has passed.
LISTEN on the channel before the call, and poll with get_job as well: a hint may be lost. The channel
is a random name of the caller''s (''jobctl_wait_'' and 32 lowercase hex digits), so no other login
hears it. Zero rows, and nothing registered, for an unknown id or another tenant''s job. Each watcher
is removed by the hint it gets or, once expired, by tick.
Errors: JC001 a channel not of that form or a wait not in (0, 1 hour], JC004 the job has 100 watchers
or the tenant 10,000 (DETAIL retry_after: 1), JC008 jobctl.payload_keys is not JSON.
Example:
listen jobctl_wait_0af7651916cd43dd8448eb211c80319c;
select state, result from jobctl.watch_job(42, ''jobctl_wait_0af7651916cd43dd8448eb211c80319c'', ''30 seconds'');';
