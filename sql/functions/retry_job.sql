-- jobctl.retry_job: make a failed, dead or cancelled job pending and due now. A failed job still
-- has its queue row, which retry takes first (as cancel does); a dead or cancelled job has none,
-- so retry locks the job row instead. attempt is kept; max_attempts rises to at least attempt + 1.
-- Writes: _ready/_delayed/_held (delete), job (update), _ready or (a keyed job, then jobctl._admit)
-- _held (insert), _event.
create or replace function jobctl.retry_job(job_id bigint)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_job jobctl.job;
    v_now timestamptz := clock_timestamp();
    v_owned boolean;
    v_tenant jobctl.tenant;
    v_wait float8;
begin
    for i in 1..5 loop
        v_job := jobctl._find_job(retry_job.job_id, 'jobs:retry');
        if v_job.state not in ('failed', 'dead', 'cancelled') then
            raise exception using errcode = 'JC010',
                message = format('job %s is %s; only failed, dead or cancelled jobs can be retried', v_job.job_id, v_job.state),
                detail = 'field: job_id';
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
            select * into v_tenant from jobctl.tenant as t where t.tenant_id = v_job.tenant_id;
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
                perform jobctl._admit(array[v_job.tenant_id], array[v_job.concurrency_key]);
            end if;
            insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, worker_id, detail)
            values (v_job.job_id, v_job.created_at, v_now, 'retried', v_job.attempt, v_job.lease_epoch, null,
                format('manual retry of a %s job', v_job.state));
            if v_job.state <> 'failed' then
                -- a finished job is unfinished again: max_pending counts it as admitted
                perform nextval(t.admitted) from jobctl.tenant as t
                where t.tenant_id = v_job.tenant_id and t.admitted is not null;
            end if;
            perform jobctl._notify(array[v_job.queue]);
            return 'pending';
        end if;
    end loop;
    raise exception using errcode = '40001', message = format('job %s kept changing state; try again', retry_job.job_id);
end
$$;

comment on function jobctl.retry_job(bigint) is
'Make a failed, dead or cancelled job pending and due now; attempt is kept and max_attempts raised
to at least attempt + 1. Returns pending. A retry counts against the tenant''s max_pending and submit rate as a
submit does.
Errors: P0002 no job has this id (or it is another tenant''s), JC010 the job is not failed, dead or cancelled, or is
in the archive, JC004 over max_pending, JC005 over the submit rate, 40001 the job changed state five times while
the call tried (retry the call).
Example:
select jobctl.retry_job(42);';
