-- jobctl._submit_limits: the "limits" step of jobctl._submit, for a call with a tenant that has a
-- submit rate or max_pending: the jobs about to be made (p_specs: the repeats of a key are not
-- among them) must fit each tenant's max_pending (JC004) and submit rate (JC005; a batch over the
-- burst can never fit, JC001). Every limited tenant of the call is checked (pass 1) before any
-- bucket is taken from or counter advanced (pass 2), so a refused call takes nothing; the take
-- checks again (another submitter may have emptied the bucket since). Check-then-advance without a
-- lock: concurrent submitters may each slip in one batch over a limit (docs/tenants.md).
-- Calls: _pending, _bucket_size, _bucket_room, _take_tokens. Locks: nothing.
-- Writes: the tenants' submit rate bucket and admitted sequences (not undone by a rollback).
create or replace function jobctl._submit_limits(p_specs jobctl._job_spec[])
returns void
language plpgsql
as $$
#variable_conflict use_column
declare
    v_check integer;  -- pass 1 checks every tenant's bucket, pass 2 takes from them
    v_limit record;
    v_wait float8;
begin
    for v_check in 1..2 loop
        for v_limit in
            select t.tenant_id, t.submit_bucket as bucket, t.submit_rate as rate, t.submit_burst as burst,
                t.max_pending, t.admitted,
                jobctl._pending(t) as pending,
                count(*)::integer as n
            from unnest(p_specs) as s
            inner join jobctl.tenant as t on t.tenant_id = s.tenant_id
            where t.submit_bucket is not null or t.admitted is not null
            group by t.tenant_id
            order by t.tenant_id
        loop
            if v_check = 1 and v_limit.admitted is not null and v_limit.pending + v_limit.n > v_limit.max_pending then
                raise exception using errcode = 'JC004',
                    message = format('tenant %s is over its max_pending (%s unfinished + %s new > %s)',
                        v_limit.tenant_id, v_limit.pending, v_limit.n, v_limit.max_pending),
                    detail = format(E'field: tenant_id\npending: %s\nretry_after: 1', v_limit.pending),
                    hint = 'Nothing was submitted; room comes back as the tenant''s jobs finish.';
            end if;
            if v_check = 1 and v_limit.bucket is not null and v_limit.n > jobctl._bucket_size(v_limit.rate, v_limit.burst) then
                raise exception using errcode = 'JC001',
                    message = format('%s new jobs for tenant %s are more than its submit burst', v_limit.n, v_limit.tenant_id),
                    detail = 'field: jobs',
                    hint = 'Nothing was submitted; submit them in smaller batches.';
            end if;
            v_wait := case when v_limit.bucket is null then 0 when v_check = 1
                then (v_limit.n - jobctl._bucket_room(v_limit.bucket, v_limit.rate, v_limit.burst)) / v_limit.rate
                else jobctl._take_tokens(v_limit.bucket, v_limit.rate, v_limit.burst, v_limit.n) end;
            if v_wait > 0 then
                raise exception using errcode = 'JC005',
                    message = format('tenant %s is over its submit rate (%s a second)', v_limit.tenant_id, v_limit.rate),
                    detail = format(E'field: tenant_id\nretry_after: %s', round(v_wait::numeric, 3)),
                    hint = 'Nothing was submitted; try again after retry_after seconds.';
            end if;
            if v_check = 2 and v_limit.admitted is not null then
                perform nextval(v_limit.admitted) from generate_series(1, v_limit.n);
            end if;
        end loop;
    end loop;
end
$$;
