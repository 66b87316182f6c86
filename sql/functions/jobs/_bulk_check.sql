-- jobctl._bulk_check: refuse a bulk action's batch bounds (retry_jobs, cancel_jobs) with JC001
-- naming the field: max_jobs 1..1000 (the claim's bound), after_id NULL or at least 0.
create or replace function jobctl._bulk_check(p_max_jobs integer, p_after_id bigint)
returns void
language plpgsql
immutable
as $$
begin
    if p_max_jobs is null or p_max_jobs not between 1 and 1000 then
        raise exception using errcode = 'JC001',
            message = format('max_jobs must be between 1 and 1000, not %s', coalesce(p_max_jobs::text, 'NULL')),
            detail = 'field: max_jobs', hint = 'Call again with after_id => the last_id returned for the next batch.';
    end if;
    if p_after_id < 0 then
        raise exception using errcode = 'JC001', message = format('after_id must be NULL or at least 0, not %s', p_after_id),
            detail = 'field: after_id';
    end if;
end
$$;
