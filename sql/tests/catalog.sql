-- Catalog checks over schema jobctl: every public function and procedure has a COMMENT; no SECURITY
-- DEFINER function without a pinned search_path; private (_-prefixed) functions are not executable
-- by PUBLIC; the contract's functions exist with its parameter names. Failures list the offenders.
begin;
select plan(7);

-- (a) a COMMENT on every public function and procedure (it shows in \df+ and feeds docs/)
select is(
    array(
        select p.oid::regprocedure::text
        from pg_proc as p
        where
            p.pronamespace = 'jobctl'::regnamespace
            and left(p.proname, 1) <> '_'
            and obj_description(p.oid, 'pg_proc') is null
        order by 1
    ),
    '{}'::text[],
    'every public function and procedure in jobctl has a COMMENT (listed: the ones without)'
);
select cmp_ok(
    (
        select count(*)
        from pg_proc as p
        where p.pronamespace = 'jobctl'::regnamespace and left(p.proname, 1) <> '_'
    ),
    '>=',
    15::bigint,
    'the check above saw the public functions'
);

-- (b) SECURITY DEFINER only with a pinned search_path
select is(
    array(
        select p.oid::regprocedure::text
        from pg_proc as p
        where
            p.pronamespace = 'jobctl'::regnamespace
            and p.prosecdef
            and not exists (
                select from unnest(coalesce(p.proconfig, '{}')) as c (setting)
                where c.setting like 'search\_path=%'
            )
        order by 1
    ),
    '{}'::text[],
    'no SECURITY DEFINER function in jobctl lacks SET search_path (listed: the ones that do)'
);

-- (c) private functions: no EXECUTE for PUBLIC (a NULL proacl means the default, which grants it)
select is(
    array(
        select p.oid::regprocedure::text
        from pg_proc as p
        where
            p.pronamespace = 'jobctl'::regnamespace
            and left(p.proname, 1) = '_'
            and exists (
                select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) as a
                where a.grantee = 0 and a.privilege_type = 'EXECUTE'
            )
        order by 1
    ),
    '{}'::text[],
    'no private (_-prefixed) function in jobctl is executable by PUBLIC (listed: the ones that are)'
);
select is(
    array(
        select p.oid::regprocedure::text
        from pg_proc as p
        where
            p.pronamespace = 'jobctl'::regnamespace
            and left(p.proname, 1) = '_'
            and has_function_privilege('public', p.oid, 'execute')
        order by 1
    ),
    '{}'::text[],
    'has_function_privilege agrees: PUBLIC cannot execute any private function'
);
select cmp_ok(
    (
        select count(*)
        from pg_proc as p
        where p.pronamespace = 'jobctl'::regnamespace and left(p.proname, 1) = '_'
    ),
    '>=',
    1::bigint,
    'the checks above saw private functions'
);

-- (d) the contract's functions, with its argument types and names (callers pass named arguments)
create temp table contract (signature text, arg_names text[]);
insert into contract (signature, arg_names) values
(
    'jobctl.put_tenant(text, integer, bigint, integer, numeric, integer, numeric, integer)',
    '{tenant_id,weight,max_pending,max_running,submit_rate,submit_burst,claim_rate,claim_burst}'
),
(
    'jobctl.submit_job(text, text, jsonb, integer, timestamptz, text, integer, jsonb, interval)',
    '{tenant_id,queue,payload,priority,run_at,dedup_key,max_attempts,backoff,timeout}'
),
('jobctl.submit_jobs(jsonb)', '{jobs}'),
('jobctl.claim_job(text, text[], integer, interval)', '{worker_id,queues,max_jobs,lease}'),
('jobctl.heartbeat(bigint, bigint, interval)', '{job_id,lease_epoch,extend}'),
('jobctl.complete_job(bigint, bigint, jsonb)', '{job_id,lease_epoch,result}'),
('jobctl.complete_jobs(bigint[], bigint[])', '{job_ids,lease_epochs}'),
('jobctl.fail_job(bigint, bigint, text, boolean)', '{job_id,lease_epoch,error,retryable}'),
('jobctl.reap_expired_leases()', '{}'),
('jobctl.cancel_job(bigint)', '{job_id}'),
('jobctl.retry_job(bigint)', '{job_id}'),
('jobctl.get_job(bigint)', '{job_id}'),
('jobctl.list_jobs(text, text, text, bigint, integer)', '{tenant_id,state,queue,before_id,max_rows}'),
('jobctl.job_history(bigint)', '{job_id}'),
('jobctl.stats(text, text)', '{tenant_id,queue}'),
('jobctl.put_schedule(text, text, text, text, jsonb, integer)', '{tenant_id,name,cron,queue,payload,priority}'),
('jobctl.drop_schedule(text, text)', '{tenant_id,name}'),
('jobctl.cron_next(text, timestamptz)', '{cron,after}'),
('jobctl.create_api_token(text, text[])', '{tenant_id,scopes}');

-- the input parameters' names of a function (OUT columns of RETURNS TABLE left out); NULL when
-- there is no such function
create function pg_temp.in_arg_names(p_fn regprocedure) returns text[]
language sql as $$
    select case when p_fn is not null then coalesce(
        (
            select array_agg(a.name order by a.n)
            from pg_proc as p
            cross join lateral unnest(
                p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char", array[p.pronargs]))
            ) with ordinality as a (name, mode, n)
            where p.oid = p_fn and a.mode in ('i', 'b', 'v')
        ),
        '{}'
    ) end
$$;

select is(
    array(
        select c.signature || ' ' || coalesce(pg_temp.in_arg_names(to_regprocedure(c.signature))::text, 'missing')
        from contract as c
        where
            c.signature !~ 'schedule|cron_next|api_token'
            and pg_temp.in_arg_names(to_regprocedure(c.signature)) is distinct from c.arg_names
        order by 1
    ),
    '{}'::text[],
    'the contract''s job and tenant functions exist with its argument types and names (listed: the ones that do not)'
);

select * from finish();
rollback;
