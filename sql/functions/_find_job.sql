-- jobctl._find_job: the job row with this id, read without locking; P0002 when there is none.
create or replace function jobctl._find_job(p_job_id bigint)
returns jobctl.job
language plpgsql
stable
as $$
declare
    v_job jobctl.job;
begin
    select * into v_job from jobctl.job as j where j.job_id = p_job_id;
    if not found then
        raise exception using errcode = 'P0002', message = format('job %s not found', p_job_id),
            detail = 'field: job_id';
    end if;
    return v_job;
end
$$;
