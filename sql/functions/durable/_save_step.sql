-- jobctl._save_step: insert a step of the running job p_run unless the job has it (the first save
-- wins), refusing a job's 1001st step. Shared by save_step and await_event (its outcomes). The
-- caller holds the job's _running row. Writes: _step (insert).
create or replace function jobctl._save_step(p_run jobctl._running, p_step text, p_result jsonb)
returns void
language plpgsql
as $$
begin
    if exists (select from jobctl._step as s where s.job_id = p_run.job_id and s.step = p_step) then
        return;
    end if;
    if (select count(*) from (
            select from jobctl._step as s where s.job_id = p_run.job_id limit 1000
        ) as x) >= 1000 then
        raise exception using errcode = 'JC001', message = format('job %s has 1000 steps, the limit', p_run.job_id),
            detail = 'field: step', hint = 'Fold a loop''s iterations into fewer steps, or split the work into jobs.';
    end if;
    insert into jobctl._step (job_id, step, job_created_at, tenant_id, attempt, lease_epoch, result)
    values (p_run.job_id, p_step, p_run.created_at, p_run.tenant_id, p_run.attempt, p_run.lease_epoch, p_result)
    on conflict on constraint _step_pkey do nothing;
end
$$;
