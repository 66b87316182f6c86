-- jobctl.await_job: the end of a child job that the job running under lease_epoch spawned for its
-- step, or the job parked until the child ends. Steps: the fence (the job's _running row); an
-- outcome saved earlier (the step) answers again; the step's child, submitted the first time
-- (jobctl.submit_jobs, in the parent's tenant: its quota, rates and bounds apply) and recorded in
-- _spawn; the child's row locked FOR SHARE so it cannot end unseen; an ended child's state, result
-- and error saved as the step (under the lease's KEY SHARE lock); a child not ended parks the parent
-- as a workflow's child waits for its parent (jobctl._park 'job': a _waiting row, an on_end edge),
-- released by the child's completion, death or cancellation, after which the same call answers.
-- While the tenant moves off this shard no child is spawned: the parent is parked as a sleep of a
-- second ('sleep'), to ask again where the move takes it.
-- Calls: _acting_tenants, submit_jobs, _save_step, _park. Locks: the _running row (KEY SHARE, or
-- deleted), the tenant row (KEY SHARE: a first spawn), the child's job row (FOR SHARE), the parent's
-- job row.
-- Writes: job, _spawn, _step; through submit_jobs the child; through _park _waiting, _edge, _event.
create or replace function jobctl.await_job(
    job_id bigint, lease_epoch bigint, step text, child jsonb, cancel_with_parent boolean default true
)
returns table (outcome text, child_id bigint, state text, result jsonb, error text)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_run jobctl._running;
    v_saved jsonb;
    v_child bigint;
    v_job jobctl.job;
    v_moving boolean := false;  -- the tenant moves off this shard: no child is spawned here
begin
    if await_job.job_id is null or await_job.lease_epoch is null then
        raise exception using errcode = 'JC001', message = 'job_id and lease_epoch must not be NULL';
    end if;
    if await_job.step is null or length(await_job.step) not between 1 and 200 or await_job.step ~ jobctl._unprintable()
       or await_job.step like 'event:%' then
        raise exception using errcode = 'JC001',
            message = 'step must be 1 to 200 printable characters, not starting with "event:"', detail = 'field: step';
    end if;
    if jsonb_typeof(await_job.child) is distinct from 'object' or await_job.child ? 'tenant_id' then
        raise exception using errcode = 'JC001',
            message = 'child must be a job object (submit_jobs'' keys) without tenant_id: it is the parent''s',
            detail = 'field: child';
    end if;
    select r.* into v_run from jobctl._running as r
    where r.job_id = await_job.job_id and r.lease_epoch = await_job.lease_epoch
        and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]));  -- (another tenant's: fenced)
    if not found then
        return query select 'fenced'::text, null::bigint, null::text, null::jsonb, null::text;
        return;
    end if;
    select s.result into v_saved from jobctl._step as s where s.job_id = v_run.job_id and s.step = await_job.step;
    if found then
        return query select 'ended'::text, (v_saved ->> 'child_id')::bigint, v_saved ->> 'state', v_saved -> 'result', v_saved ->> 'error';
        return;
    end if;

    select s.child_id into v_child from jobctl._spawn as s where s.parent_id = v_run.job_id and s.step = await_job.step;
    if not found then
        -- a tenant moving off this shard spawns no child here: the move would leave it behind
        -- (jobctl._move_out_begin). The tenant row's lock waits for a move's begin, or holds it
        -- up until this spawn is seen; the parent sleeps a second and asks again, moved by then
        perform from jobctl.tenant as t where t.tenant_id = v_run.tenant_id for key share;
        v_moving := exists (
            select from jobctl._tenant_move as m where m.tenant_id = v_run.tenant_id and m.finished_at is null
        );
        if not v_moving then
            select x.job_id into v_child
            from jobctl.submit_jobs(jsonb_build_array(await_job.child || jsonb_build_object('tenant_id', v_run.tenant_id))) as x;
            insert into jobctl._spawn (parent_id, step, child_id, cancel_with_parent)
            values (v_run.job_id, await_job.step, v_child, coalesce(await_job.cancel_with_parent, true));
        end if;
    end if;
    if not v_moving then
        -- the child cannot end between this read and the edge's insert (its end updates the row)
        select j.* into v_job from jobctl.job as j where j.job_id = v_child for share;
        if v_job.state in ('completed', 'dead', 'cancelled') then
            perform from jobctl._running as r
            where r.job_id = v_run.job_id and r.lease_epoch = v_run.lease_epoch
            for key share;
            if not found then
                return query select 'fenced'::text, null::bigint, null::text, null::jsonb, null::text;
                return;
            end if;
            v_saved := jsonb_build_object('child_id', v_child, 'state', v_job.state, 'result', v_job.result,
                'error', v_job.last_error);
            perform jobctl._save_step(v_run, await_job.step, v_saved);
            return query select 'ended'::text, v_child, v_job.state, v_job.result, v_job.last_error;
            return;
        end if;
    end if;
    delete from jobctl._running as r
    where r.job_id = v_run.job_id and r.lease_epoch = v_run.lease_epoch
    returning * into v_run;
    if not found then
        return query select 'fenced'::text, null::bigint, null::text, null::jsonb, null::text;
        return;
    end if;
    if v_moving then
        perform jobctl._park(v_run, clock_timestamp() + interval '1 second', 'sleep', 'tenant moving');
    else
        perform jobctl._park(v_run, clock_timestamp(), 'job', v_child::text, v_child);
    end if;
    return query select 'suspended'::text, v_child, v_job.state, null::jsonb, null::text;
end
$$;

comment on function jobctl.await_job(bigint, bigint, text, jsonb, boolean) is
'The end of the child job that the job running under lease_epoch spawns for its step: child is a job
object of submit_jobs'' keys (queue, payload, ...) without tenant_id, submitted once, in the parent''s tenant
(its quota and rates apply), the first time the step is awaited. outcome ended, with the child''s id, state
(completed, dead or cancelled), result and last error, when it has ended; otherwise suspended: the lease ends as
in sleep_job and the job is waiting until the child ends, then due at once, and the same call answers ended
(the outcome is saved as the step). While the tenant moves to another shard a first await spawns nothing:
suspended with a NULL child_id, the job sleeps a second and asks again on the shard the move takes it to.
fenced when the job is not running under that epoch: nothing changed.
cancel_with_parent (default true): a cancel of the parent cancels the child if it has not ended.
Errors: JC001 NULL job_id or lease_epoch, a bad step or child, and submit_jobs'' errors for the child.
Example:
select * from jobctl.await_job(42, 7, ''spawn:resize'', ''{"queue": "images", "payload": {"id": 9}}'');';
