-- jobctl.retry_jobs: retry one batch of the jobs a bulk filter matches: at most max_jobs failed,
-- dead or cancelled hot jobs of the caller's tenants with job_id above after_id, in job_id order,
-- each exactly as retry_job retries it (jobctl._retry). The caller loops, one short transaction a
-- call, passing last_id back as after_id until done (a SECURITY DEFINER function or procedure
-- cannot COMMIT, so the loop is the caller's). A job another call or a worker moved on meanwhile
-- is skipped. A tenant out of max_pending or submit-rate room stops the batch before that job:
-- what was retried stays, last_id points before it, stopped says why and retry_after how long to
-- wait; if nothing was retried yet, the call raises JC004 or JC005 as retry_job does. A filter
-- over several tenants (no filter.tenant_id, a caller of more than one) skips such a tenant's jobs
-- instead and goes on with the others', so that one full tenant cannot hold up the rest: they count
-- as skipped, and stopped and retry_after name the last limit met.
-- A job whose rows another transaction holds for over lock_timeout is skipped, as cancel_jobs
-- skips one, and the retried keyed jobs are admitted at the end, as cancel_jobs admits its keys.
-- One audit entry a call. Writes: as jobctl._retry, audit_log.
create or replace function jobctl.retry_jobs(filter jsonb, max_jobs integer default 1000, after_id bigint default null)
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
    v_outcome text;
    v_wait numeric;
    v_acted integer := 0;
    v_seen integer := 0;
    v_last bigint := after_id;
    v_stopped text;
    v_many boolean;  -- the filter spans several tenants: one without room is skipped, not a stop
    v_tenant text;
    v_key text;
    v_key_tenants text[] := '{}';  -- the retried keyed jobs' keys, admitted at the end
    v_keys text[] := '{}';
begin
    perform jobctl._bulk_check(max_jobs, after_id);
    v_tenants := jobctl._acting_tenants('jobs:retry');
    if v_filter ? 'tenant_id' then
        perform jobctl._require_tenant(v_filter ->> 'tenant_id', 'jobs:retry', 'filter.tenant_id');
    end if;
    v_many := not (v_filter ? 'tenant_id') and (v_tenants is null or cardinality(v_tenants) > 1);
    for v_id in
        select f.id from jobctl._filter_jobs(v_filter, v_tenants, jobctl._action_states('retry'), after_id, max_jobs) as f (id)
    loop
        begin
            select r.outcome, r.retry_after, (r.job).tenant_id, (r.job).concurrency_key
            into v_outcome, v_wait, v_tenant, v_key
            from jobctl._retry(v_id, v_tenants, true, p_admit => false) as r;
        exception when lock_not_available then
            v_outcome := 'busy';  -- skipped
        end;
        if v_outcome in ('JC004', 'JC005') and v_many then
            -- the other tenants' jobs go on; this one is skipped, and the result says why
            v_stopped := v_outcome;
            v_outcome := 'no room';
        end if;
        if v_outcome in ('JC004', 'JC005') and v_acted = 0 then
            -- no progress to keep: retry it as retry_job does, which raises the tenant's error
            -- (or retries it, if room came back meanwhile)
            select r.outcome, (r.job).tenant_id, (r.job).concurrency_key into v_outcome, v_tenant, v_key
            from jobctl._retry(v_id, v_tenants, false, p_admit => false) as r;
        end if;
        if v_outcome in ('JC004', 'JC005') then
            v_stopped := v_outcome;
            exit;
        end if;
        v_seen := v_seen + 1;
        v_last := v_id;
        if v_outcome = 'retried' then
            v_acted := v_acted + 1;
            if v_key is not null then
                v_key_tenants := v_key_tenants || v_tenant;
                v_keys := v_keys || v_key;
            end if;
        end if;
    end loop;
    if v_keys <> '{}' then
        perform set_config('lock_timeout', '0', true);  -- until the function returns
        perform jobctl._admit(v_key_tenants, v_keys);
    end if;
    perform jobctl._audit('retry_jobs', v_filter ->> 'tenant_id', jsonb_build_object(
        'filter', v_filter || case when v_filter ? 'subject_key' then '{"subject_key": "(given)"}'::jsonb else '{}' end,
        'after_id', after_id, 'max_jobs', max_jobs, 'last_id', v_last, 'retried', v_acted, 'skipped', v_seen - v_acted,
        'stopped', v_stopped
    ));
    return query select v_acted, v_seen - v_acted, v_last, (v_many or v_stopped is null) and v_seen < max_jobs, v_stopped,
        case when v_stopped is not null then v_wait end;
end
$$;

comment on function jobctl.retry_jobs(jsonb, integer, bigint) is
'Retry one batch of the jobs a filter matches (the filter of jobctl.count_jobs): at most max_jobs (1..1000, default
1000) failed, dead or cancelled jobs with job_id above after_id, in job_id order, each as retry_job retries it. Returns
acted (retried), skipped (moved on meanwhile, or held by another transaction for over 0.5 s), last_id (pass it as
after_id to the next call), done (no more to look at) and, when a tenant''s max_pending or submit rate stopped the
batch, stopped (JC004 or JC005) and retry_after seconds: what was retried stays, and the next call resumes at the job
that was refused. A filter over several tenants (no filter.tenant_id, and a caller acting for more than one) does not
stop there: that tenant''s jobs are skipped and the others'' retried, and stopped and retry_after name the last limit
met. Call it in a loop, one transaction a call; each call is audited with its filter and counts. Pin finished_before
to the time of the confirmation so that a job that dies again meanwhile is not retried twice.
Errors: JC001 a bad filter (field filter.<key>), max_jobs or after_id, 42501 filter.tenant_id is another tenant,
JC004 over max_pending or JC005 over the submit rate before any job of a one-tenant batch was retried (nothing
written).
Example:
select * from jobctl.retry_jobs(''{"tenant_id": "acme", "state": "dead"}'', max_jobs => 1000, after_id => null);';
