-- jobctl.cancel_jobs: cancel one batch of the jobs a bulk filter matches: at most max_jobs
-- pending, failed or running hot jobs of the caller's tenants with job_id above after_id, in
-- job_id order, each exactly as cancel_job cancels it (jobctl._cancel: a running job's lease is
-- revoked, so its worker is fenced). The caller loops, one short transaction a call, passing
-- last_id back as after_id until done. A job that finished meanwhile is skipped, and so is one
-- whose rows another transaction holds for over lock_timeout (a completion waiting for a
-- concurrency key this batch took for an earlier job would otherwise deadlock with it): each job
-- is cancelled in a subtransaction of its own, which the timeout rolls back. The places the
-- cancelled keyed jobs gave up go to their keys' next jobs at the end, in one jobctl._admit (keys
-- locked in bucket order, waiting as a completion waits): a batch that held a key lock while it
-- waited for another job's rows could close a cycle through a third transaction queued for the key,
-- which the deadlock detector would kill (tests/test_bulk_jobs.py). One audit entry a call.
-- Writes: as jobctl._cancel, audit_log.
create or replace function jobctl.cancel_jobs(filter jsonb, max_jobs integer default 1000, after_id bigint default null)
returns table (acted integer, skipped integer, last_id bigint, done boolean, stopped text, retry_after numeric)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set lock_timeout = '500ms'  -- under deadlock_timeout (1 s): a batch gives way before a cycle is found
as $$
#variable_conflict use_variable
declare
    v_filter jsonb := jobctl._job_filter(filter);
    v_tenants text[];
    v_id bigint;
    v_acted integer := 0;
    v_seen integer := 0;
    v_last bigint := after_id;
    v_outcome text;
    v_tenant text;
    v_key text;
    v_key_tenants text[] := '{}';  -- the cancelled keyed jobs' keys, admitted at the end
    v_keys text[] := '{}';
begin
    perform jobctl._bulk_check(max_jobs, after_id);
    v_tenants := jobctl._acting_tenants('jobs:cancel');
    if v_filter ? 'tenant_id' then
        perform jobctl._require_tenant(v_filter ->> 'tenant_id', 'jobs:cancel', 'filter.tenant_id');
    end if;
    for v_id in
        select f.id from jobctl._filter_jobs(v_filter, v_tenants, jobctl._action_states('cancel'), after_id, max_jobs) as f (id)
    loop
        v_seen := v_seen + 1;
        v_last := v_id;
        begin
            select c.outcome, (c.job).tenant_id, (c.job).concurrency_key into v_outcome, v_tenant, v_key
            from jobctl._cancel(v_id, v_tenants, p_admit => false) as c;
            if v_outcome = 'cancelled' then
                v_acted := v_acted + 1;
                if v_key is not null then
                    v_key_tenants := v_key_tenants || v_tenant;
                    v_keys := v_keys || v_key;
                end if;
            end if;
        exception when lock_not_available then
            null;  -- busy: skipped
        end;
    end loop;
    if v_keys <> '{}' then
        perform set_config('lock_timeout', '0', true);  -- until the function returns
        perform jobctl._admit(v_key_tenants, v_keys);
    end if;
    perform jobctl._audit('cancel_jobs', v_filter ->> 'tenant_id', jsonb_build_object(
        'filter', v_filter || case when v_filter ? 'subject_key' then '{"subject_key": "(given)"}'::jsonb else '{}' end,
        'after_id', after_id, 'max_jobs', max_jobs, 'last_id', v_last, 'cancelled', v_acted, 'skipped', v_seen - v_acted
    ));
    return query select v_acted, v_seen - v_acted, v_last, v_seen < max_jobs, null::text, null::numeric;
end
$$;

comment on function jobctl.cancel_jobs(jsonb, integer, bigint) is
'Cancel one batch of the jobs a filter matches (the filter of jobctl.count_jobs): at most max_jobs (1..1000, default
1000) pending, failed or running jobs with job_id above after_id, in job_id order, each as cancel_job cancels it (a
running job''s lease is revoked). Returns acted (cancelled), skipped (finished meanwhile, or held by another transaction for over 0.5 s), last_id (pass it as
after_id to the next call) and done (no more to look at); stopped and retry_after are always NULL (the shape of
retry_jobs). Call it in a loop, one transaction a call; each call is audited with its filter and counts.
Errors: JC001 a bad filter (field filter.<key>), max_jobs or after_id, 42501 filter.tenant_id is another tenant.
Example:
select * from jobctl.cancel_jobs(''{"tenant_id": "acme", "queue": "email", "state": "pending"}'', after_id => 41000);';
