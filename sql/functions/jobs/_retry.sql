-- jobctl._retry: the retry of one hot job of p_tenants (NULL: every tenant), shared by retry_job
-- and retry_jobs. A failed job still has its queue row, which retry takes first (as cancel does); a
-- dead or cancelled job has none, so retry locks the job row instead. A retry is a resubmission:
-- a dead or cancelled job counts against max_pending (JC004) and every retry takes a submit token
-- (JC005), raised as retry_job raises them. Returns the outcome with the job row as read:
-- retried; missing (no such hot job of these tenants: the caller tells unknown from archived);
-- state (not failed, dead or cancelled); busy (it changed state five times while we tried); or,
-- only when p_stop_over_limit, JC004 or JC005 with retry_after in seconds, checked before the job
-- is touched, so that a batch can stop there with what it did so far.
-- A keyed job goes to _held and is admitted (jobctl._admit) unless p_admit is false: then the caller
-- admits the keys of the jobs it retried itself, once, at its end (retry_jobs, as cancel_jobs).
-- Writes: _ready/_delayed/_held (delete), job (update), _ready or (a keyed job, then
-- jobctl._admit) _held (insert), _event, _stat_delta.
create or replace function jobctl._retry(
    p_job_id bigint, p_tenants text[], p_stop_over_limit boolean, p_admit boolean default true,
    out outcome text, out job jobctl.job, out retry_after numeric
)
language plpgsql
as $$
declare
    v_job jobctl.job;
    v_now timestamptz := clock_timestamp();
    v_owned boolean;
    v_tenant jobctl.tenant;
    v_wait float8;
begin
    for i in 1..5 loop
        select * into v_job from jobctl.job as j
        where j.job_id = p_job_id and j.tenant_id = any(coalesce(p_tenants, array[j.tenant_id]));
        job := v_job;
        if not found then
            outcome := 'missing';
            return;
        end if;
        if v_job.state <> all(jobctl._action_states('retry')) then
            outcome := 'state';
            return;
        end if;
        select * into v_tenant from jobctl.tenant as t where t.tenant_id = v_job.tenant_id;
        if v_tenant.moved_to is not null then
            -- history left on the shard the tenant moved from: a retry here would never run
            raise exception using errcode = 'JC011',
                message = format('tenant %s has moved to shard %s: its jobs left here are history', v_job.tenant_id, v_tenant.moved_to),
                detail = 'field: job_id',
                hint = 'Submit the job again (its tenant runs on the other shard now).';
        end if;
        if p_stop_over_limit then
            if v_job.state <> 'failed' and jobctl._pending(v_tenant) + 1 > v_tenant.max_pending then
                outcome := 'JC004';
                retry_after := 1;
                return;
            end if;
            if jobctl._bucket_room(v_tenant.submit_bucket, v_tenant.submit_rate, v_tenant.submit_burst) < 1 then
                outcome := 'JC005';
                retry_after := round(
                    ((1 - jobctl._bucket_room(v_tenant.submit_bucket, v_tenant.submit_rate, v_tenant.submit_burst))
                        / v_tenant.submit_rate)::numeric, 3
                );
                return;
            end if;
        end if;
        if v_job.state = 'failed' then
            v_owned := jobctl._take_queue_row(v_job);
        else
            perform from jobctl.job as j
            where j.job_id = v_job.job_id and j.created_at = v_job.created_at and j.state = v_job.state
            for update;
            v_owned := found;
        end if;
        if v_owned then
            -- a retry submits the job again: it counts against max_pending (a finished job only:
            -- a failed one is still unfinished) and the submit rate, as a submit does
            if v_job.state <> 'failed' and jobctl._pending(v_tenant) + 1 > v_tenant.max_pending then
                raise exception using errcode = 'JC004',
                    message = format('tenant %s is over its max_pending (%s unfinished + 1 retried > %s)',
                        v_tenant.tenant_id, jobctl._pending(v_tenant), v_tenant.max_pending),
                    detail = format(E'field: tenant_id\npending: %s\nretry_after: 1', jobctl._pending(v_tenant)),
                    hint = 'Nothing was retried; room comes back as the tenant''s jobs finish.';
            end if;
            v_wait := jobctl._take_tokens(v_tenant.submit_bucket, v_tenant.submit_rate, v_tenant.submit_burst, 1);
            if v_wait > 0 then
                raise exception using errcode = 'JC005',
                    message = format('tenant %s is over its submit rate (%s a second)', v_tenant.tenant_id, v_tenant.submit_rate),
                    detail = format(E'field: tenant_id\nretry_after: %s', round(v_wait::numeric, 3)),
                    hint = 'Nothing was retried; try again after retry_after seconds.';
            end if;
            update jobctl.job as j
            set state = 'pending', run_at = v_now, finished_at = null,
                max_attempts = greatest(j.max_attempts, j.attempt + 1)
            where j.job_id = v_job.job_id and j.created_at = v_job.created_at;
            if v_job.concurrency_key is null then
                insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
                values (v_job.queue, v_job.tenant_id, v_job.priority, v_now, v_job.job_id, v_job.created_at);
            else
                -- a keyed job waits for a place like any other of its key
                insert into jobctl._held (tenant_id, concurrency_key, run_at, job_id, created_at, queue, priority)
                values (v_job.tenant_id, v_job.concurrency_key, v_now, v_job.job_id, v_job.created_at, v_job.queue, v_job.priority);
                if p_admit then
                    perform jobctl._admit(array[v_job.tenant_id], array[v_job.concurrency_key]);
                end if;
            end if;
            -- (a failed job's queue row counted itself out in _take_queue_row)
            insert into jobctl._stat_delta (tenant_id, queue, pending, dead, cancelled, retried)
            values (v_job.tenant_id, v_job.queue, 1, case when v_job.state = 'dead' then -1 end,
                case when v_job.state = 'cancelled' then -1 end, 1);
            insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id, detail)
            values (v_job.job_id, v_job.created_at, v_now, 'retried', v_job.attempt, v_job.lease_epoch, null,
                format('manual retry of a %s job', v_job.state));
            if v_job.state <> 'failed' then
                -- a finished job is unfinished again: max_pending counts it as admitted
                perform nextval(t.admitted) from jobctl.tenant as t
                where t.tenant_id = v_job.tenant_id and t.admitted is not null;
            end if;
            perform jobctl._notify(array[v_job.queue]);
            outcome := 'retried';
            return;
        end if;
        -- the job moved on between our read and our lock or delete (claimed, retried): look again
    end loop;
    outcome := 'busy';
end
$$;
