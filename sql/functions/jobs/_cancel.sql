-- jobctl._cancel: the cancel of one hot job of p_tenants (NULL: every tenant), shared by
-- cancel_job and cancel_jobs. Whoever deletes a job's _ready, _delayed or _running row owns its
-- next transition, so cancel takes that row first (waiting for a claimer or completer that holds
-- it, then looking again), then updates the job row. A job with a concurrency key gives its place
-- to the key's next job (jobctl._admit), unless p_admit is false: then the caller admits the keys of
-- the jobs it cancelled itself, once, at its end (cancel_jobs: a batch that held a key lock while it
-- waited for another job's rows could close a lock cycle through a third transaction queued for
-- that key). Returns the outcome with the job row as read: cancelled;
-- missing (no such hot job of these tenants: the caller tells unknown from archived); state
-- (completed, dead or cancelled); busy (it changed state five times while we tried).
-- The job's last_error becomes 'cancelled: on request' (an earlier attempt's error stays on its
-- failed event). The children it spawned for its steps with cancel_with_parent (jobctl.await_job) are
-- cancelled with it, each as this cancels a job. Writes: _ready/_delayed/_held/_running (delete), job
-- (update), _event, _stat_delta.
create or replace function jobctl._cancel(
    p_job_id bigint, p_tenants text[], p_admit boolean default true, out outcome text, out job jobctl.job
)
language plpgsql
as $$
declare
    v_job jobctl.job;
    v_run jobctl._running;
    v_owned boolean;
    v_now timestamptz := clock_timestamp();
begin
    for i in 1..5 loop
        select * into v_job from jobctl.job as j
        where j.job_id = p_job_id and j.tenant_id = any(coalesce(p_tenants, array[j.tenant_id]));
        job := v_job;
        if not found then
            outcome := 'missing';
            return;
        end if;
        if v_job.state <> all(jobctl._action_states('cancel')) then
            outcome := 'state';
            return;
        end if;
        if v_job.state = 'running' then
            delete from jobctl._running as r where r.job_id = v_job.job_id returning * into v_run;
            v_owned := found;
            if v_owned then
                insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id)
                values (v_job.job_id, v_job.created_at, v_run.started_at, 'claimed', v_run.attempt, v_run.lease_epoch, v_run.worker_id);
                insert into jobctl._stat_delta (tenant_id, queue, running) values (v_job.tenant_id, v_job.queue, -1);
            end if;
        else
            v_owned := jobctl._take_queue_row(v_job);
        end if;
        if v_owned then
            -- last_error says why it ended, as every end's does (a completion clears it, a death
            -- writes its error, a waiting job's cancel its reason); the error of an earlier attempt
            -- stays in job_history (its failed event)
            update jobctl.job as j set state = 'cancelled', finished_at = v_now, last_error = 'cancelled: on request',
                last_traceback = null,
                -- a running attempt's last progress, kept by the job
                progress = case when v_run.job_id is null then j.progress else v_run.progress end
            where j.job_id = v_job.job_id and j.created_at = v_job.created_at;
            perform jobctl._count_finished(array[v_job.tenant_id]);
            perform jobctl._notify_watchers(array[v_job.job_id]);  -- wakes its watchers, if any (watch_job)
            insert into jobctl._stat_delta (tenant_id, queue, cancelled, withdrawn) values (v_job.tenant_id, v_job.queue, 1, 1);
            if v_job.concurrency_key is not null and p_admit then
                perform jobctl._admit(array[v_job.tenant_id], array[v_job.concurrency_key]);  -- its place, if it had one
            end if;
            -- the jobs waiting on this one follow their policy
            perform jobctl._parents_ended(array[v_job.job_id]);
            -- the children it spawned for its steps (await_job) that are to go with it
            perform jobctl._cancel(s.child_id, p_tenants, p_admit)
            from jobctl._spawn as s
            where s.parent_id = v_job.job_id and s.cancel_with_parent;
            -- the event names a lease epoch only when the cancel revoked that (running) lease
            insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id, detail)
            values (v_job.job_id, v_job.created_at, v_now, 'cancelled', coalesce(v_run.attempt, v_job.attempt),
                v_run.lease_epoch, v_run.worker_id, 'cancelled: on request');
            outcome := 'cancelled';
            return;
        end if;
        -- the job moved on between our read and our delete (claimed, completed, reaped): look again
    end loop;
    outcome := 'busy';
end
$$;
