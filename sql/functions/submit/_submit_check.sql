-- jobctl._submit_check: the "check" step of jobctl._submit: every spec of the call is valid and of
-- the caller's tenants, or the first that is not raises, naming its field (and, with p_batch, its
-- index: jobs[3].priority). p_caller: check the caller's access (jobctl._acting_tenants); false
-- for a schedule's run. Says whether a job of the call depends on an earlier one (linked: after,
-- a workflow's edges; jobctl._insert_jobs draws their ids first) and whether a spec has a dedup key
-- (keyed: jobctl._dedup_holders).
-- Calls: _spec_rows, _spec_fault (both inlined), _acting_tenants (p_caller), _unprintable (errors).
-- Locks: nothing. Writes: nothing.
create or replace function jobctl._submit_check(
    p_specs jobctl._job_spec[], p_batch boolean, p_caller boolean, p_now timestamptz,
    linked out boolean, keyed out boolean
)
language plpgsql
as $$
#variable_conflict use_column
declare
    v_extra boolean;  -- a spec has depends_on, after, callback_of or a dedup scope
    v_bad record;
    v_msg text;
    v_field text;
    v_tenants text[];
begin
    if cardinality(p_specs) > 10000 then
        raise exception using errcode = 'JC001',
            message = format('jobs holds %s jobs; at most 10000 may be submitted at once', cardinality(p_specs)),
            detail = 'field: jobs',
            hint = 'Nothing was submitted; submit them in batches of at most 10000.';
    end if;
    -- whether a spec has a workflow's or a scoped key's options (most calls have none: their rules
    -- are skipped), one depends on an earlier spec of the call, one has a dedup key: one pass
    select coalesce(bool_or(
            s.depends_on is not null or s.after is not null or s.callback_of is not null
            or s.dedup_states is not null or s.dedup_period is not null or s.dedup_mode is not null
        ), false),
        coalesce(bool_or(s.after is not null), false),
        coalesce(bool_or(s.dedup_key is not null), false)
    into v_extra, linked, keyed
    from unnest(p_specs) as s;

    -- one CASE per job (jobctl._spec_fault, inlined) finds its first failed rule; the message of the
    -- call's first failure is formatted once, below
    select x.* into v_bad
    from (
        select r.ord, r.spec, jobctl._spec_fault(r.spec, r.ord, p_now, v_extra, linked) as n
        from jobctl._spec_rows(p_specs) as r
    ) as x
    where x.n is not null
    order by x.ord
    limit 1;
    if found then
        v_msg := case v_bad.n
            when 1 then 'tenant_id must be a non-empty string'
            when 2 then 'tenant_id must be at most 200 characters'
            when 3 then 'queue must be a non-empty string'
            when 4 then 'queue must be at most 200 characters'
            when 5 then 'payload must not be NULL (use {} for none)'
            when 6 then format('payload is %s bytes; the limit is 65536', octet_length((v_bad.spec).payload::text))
            when 7 then format('priority must be an integer from -100 to 100, not %s',
                coalesce((v_bad.spec).priority::text, 'NULL'))
            when 8 then format('max_attempts must be from 1 to 1000, not %s', (v_bad.spec).max_attempts)
            when 9 then 'timeout must be positive and at most 30 days'
            when 10 then 'dedup_key must be NULL or a string of 1 to 500 characters'
            when 11 then 'run_at must be from 1970-01-01 to 10 years from now'
            when 12 then 'subject_key must be NULL or a string of 1 to 500 characters'
            when 13 then 'payload must not have the key $jobctl_sealed: it marks encrypted payloads'
            when 14 then 'concurrency_key must be NULL or a string of 1 to 200 characters'
            when 15 then 'payload is nested more than 100 levels deep'
            when 17 then 'traceparent must be NULL or a W3C traceparent: 2-32-16-2 lowercase hex digits joined by -'
            when 18 then 'depends_on must be an array of at most 10000 job ids, without NULL'
            when 19 then 'depends_on must name jobs listed before this one'
            when 20 then 'dedup_key cannot be used in a call whose jobs depend on each other (a workflow)'
            when 21 then 'dedup_states, dedup_period and dedup_mode need a dedup_key'
            when 22 then 'dedup_states must be a non-empty array of job states (waiting, pending, running, failed, completed, dead, cancelled)'
            when 23 then 'dedup_period must be from 1 second to 366 days'
            when 24 then format('dedup_mode must be keep, replace or preserve_run_at, not %s', left((v_bad.spec).dedup_mode, 50))
        end;
        v_field := (array[
            'tenant_id', 'tenant_id', 'queue', 'queue', 'payload', 'payload', 'priority', 'max_attempts', 'timeout',
            'dedup_key', 'run_at', 'subject_key', 'payload', 'concurrency_key', 'payload', null, 'traceparent',
            'depends_on', 'depends_on', 'dedup_key', 'dedup_key', 'dedup_states', 'dedup_period', 'dedup_mode'
        ])[v_bad.n];
        if v_bad.n = 16 then
            v_field := case
                when (v_bad.spec).tenant_id ~ jobctl._unprintable() then 'tenant_id'
                when (v_bad.spec).queue ~ jobctl._unprintable() then 'queue'
                when (v_bad.spec).dedup_key ~ jobctl._unprintable() then 'dedup_key'
                when (v_bad.spec).subject_key ~ jobctl._unprintable() then 'subject_key'
                else 'concurrency_key'
            end;
            v_msg := v_field || ' must not contain control characters';
        end if;
        raise exception using
            errcode = case when v_bad.n = 6 then 'JC002' else 'JC001' end,
            message = case when p_batch then format('jobs[%s].%s', v_bad.ord - 1, v_msg) else v_msg end,
            detail = format('field: %s', v_field),
            hint = 'Nothing was submitted.';
    end if;

    -- only for the caller's tenants (NULL: all of them)
    v_tenants := case when p_caller then jobctl._acting_tenants('jobs:submit') end;
    if v_tenants is not null then
        select o.ordinality as ord, o.tenant_id into v_bad
        from unnest(p_specs) with ordinality as o
        where o.tenant_id <> all(v_tenants)
        order by o.ordinality
        limit 1;
        if found then
            raise exception using errcode = '42501',
                message = format('%stenant_id: no jobs:submit access to tenant %s',
                    case when p_batch then format('jobs[%s].', v_bad.ord - 1) end, v_bad.tenant_id),
                detail = 'field: tenant_id',
                hint = 'Nothing was submitted. An administrator grants a role its tenants with jobctl.grant_tenant(role, tenant).';
        end if;
    end if;
end
$$;
