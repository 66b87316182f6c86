-- jobctl._find_job: the hot job row with this id, read without locking, for a call that changes
-- it; P0002 when there is none or the caller may not act on it with scope (another tenant's job is
-- as unknown as a missing one), JC010 when the job is in the archive (finished, read-only).
create or replace function jobctl._find_job(p_job_id bigint, p_scope text)
returns jobctl.job
language plpgsql
stable
as $$
declare
    v_job jobctl.job;
    v_tenants text[] := jobctl._acting_tenants(p_scope);
begin
    select * into v_job from jobctl.job as j
    where j.job_id = p_job_id and j.tenant_id = any(coalesce(v_tenants, array[j.tenant_id]));
    if not found then
        select * into v_job from jobctl.job_archive as j
        where j.job_id = p_job_id and j.tenant_id = any(coalesce(v_tenants, array[j.tenant_id]));
        if found then
            raise exception using errcode = 'JC010',
                message = format('job %s is %s and archived (older than the hot retention); it can no longer change',
                    p_job_id, v_job.state),
                detail = 'field: job_id', hint = 'Submit it again as a new job.';
        end if;
        raise exception using errcode = 'P0002', message = format('job %s not found', p_job_id),
            detail = 'field: job_id';
    end if;
    return v_job;
end
$$;
