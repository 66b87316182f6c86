-- The privilege model of sql/grants.sql, read from the catalog: roles, who may execute what,
-- SECURITY DEFINER with a pinned search_path, nothing for PUBLIC, row-level security on every
-- table with tenant rows. What the roles can do with it: tests/test_security.py.
begin;
select plan(18);

select set_eq(
    $$select r.rolname::text from pg_catalog.pg_roles as r
      where r.rolname in ('jobctl_admin', 'jobctl_api', 'jobctl_reader', 'jobctl_worker', 'jobctl_writer')
        and not r.rolcanlogin and not r.rolsuper and not r.rolbypassrls$$,
    array['jobctl_admin', 'jobctl_api', 'jobctl_reader', 'jobctl_worker', 'jobctl_writer'],
    'the five roles exist, none can log in, none is a superuser or bypasses row-level security'
);

select is_empty(
    $$select p.oid::regprocedure::text from pg_catalog.pg_proc as p
      where p.pronamespace = 'jobctl'::regnamespace and has_function_privilege('public', p.oid, 'EXECUTE')$$,
    'no function in schema jobctl is executable by PUBLIC'
);

select is_empty(
    $$select p.oid::regprocedure::text from pg_catalog.pg_proc as p
      where p.pronamespace = 'jobctl'::regnamespace and p.prosecdef
        and not coalesce('search_path=pg_catalog, pg_temp' = any(p.proconfig), false)$$,
    'every SECURITY DEFINER function pins search_path to pg_catalog, pg_temp'
);

select set_eq(
    $$select p.proname::text from pg_catalog.pg_proc as p
      where p.pronamespace = 'jobctl'::regnamespace and p.proname !~ '^_' and not p.prosecdef$$,
    array['expand_schedules', 'maintain_partitions', 'reap_expired_leases'],
    'every public function is SECURITY DEFINER but the periodic ones tick calls, which run as the owner'
);

select is_empty(
    $$select p.oid::regprocedure::text || ' ' || r.rolname from pg_catalog.pg_proc as p
      cross join pg_catalog.pg_roles as r
      where p.pronamespace = 'jobctl'::regnamespace
        and p.proname in ('expand_schedules', 'maintain_partitions', 'reap_expired_leases')
        and r.rolname like 'jobctl\_%' and has_function_privilege(r.oid, p.oid, 'EXECUTE')$$,
    'no jobctl role may run the periodic functions'
);

-- what each role may execute (inherited membership included), against this list, not grants.sql's
create temp table granted (rolname text, member_of text[], fns text[]) on commit drop;
insert into granted values
(
    'jobctl_reader', '{}', array[
        'get_job', 'list_jobs', 'job_history', 'stats', 'claim_metrics', 'list_schedules', 'list_tenants',
        'cron_next', '_acting_tenants', 'list_concurrency_limits', 'count_jobs', 'find_jobs', 'job_counts', 'job_rates',
        'count_job_states', 'caller_access', 'job_series',
        'job_overview', 'fairness', 'histogram_bounds', 'histogram_quantile', 'schedule_runs',
        'list_workers', 'list_audit', 'parent_results', 'get_batch', 'watch_job', 'archived_job',
        'open_archived_payload', 'job_actions', 'locate_job', 'minute_rates', 'workflow_jobs', 'next_fire_times', 'job_steps'
    ]
),
(
    'jobctl_writer', array['jobctl_reader'], array[
        'submit_job', 'submit_jobs', 'cancel_job', 'retry_job', 'put_schedule', 'drop_schedule', 'forget_subject',
        'retry_jobs', 'cancel_jobs', 'delete_jobs',
        'pause_schedule', 'resume_schedule', 'run_schedule', 'submit_workflow', 'submit_batch', 'emit_event'
    ]
),
(
    'jobctl_worker', '{}', array[
        'claim_job', 'heartbeat', 'complete_job', 'complete_jobs', 'fail_job', 'release_job', 'tick', 'hint_tags', 'hint_senders',
        'worker_beat', 'worker_gone', 'parent_results', 'get_batch', 'claimable_weight', 'slot_shares', 'hint_window',
        'save_step', 'sleep_job', 'await_event', 'job_steps', 'await_job'
    ]
),
('jobctl_api', array['jobctl_writer', 'jobctl_reader'], array[
    'authenticate', 'put_queue', 'pause_queue', 'resume_queue', 'list_queues', 'queue_overview',
    'pause_tenant', 'list_api_tokens', 'list_tenant_grants', 'health_checks'
]),
(
    'jobctl_admin', array['jobctl_writer', 'jobctl_reader', 'jobctl_worker'], array[
        'put_tenant', 'pause_tenant', 'health_checks', 'create_api_token', 'revoke_api_token', 'list_api_tokens',
        'authenticate', 'grant_tenant', 'revoke_tenant', 'list_tenant_grants', 'put_concurrency_limit',
        'put_queue', 'pause_queue', 'resume_queue', 'list_queues', 'recount_counters', 'queue_overview'
    ]
);

select
    set_eq(
        format(
            $$select p.proname::text from pg_catalog.pg_proc as p
          where p.pronamespace = 'jobctl'::regnamespace and has_function_privilege(%L, p.oid, 'EXECUTE')$$,
            r
        ),
        format(
            $$select unnest(g.fns) from granted as g
          where g.rolname = %1$L or g.rolname in (select unnest(x.member_of) from granted as x where x.rolname = %1$L)$$,
            r
        ),
        r || ' may execute exactly its functions'
    ) as role_functions
from unnest(array['jobctl_reader', 'jobctl_writer', 'jobctl_worker', 'jobctl_api', 'jobctl_admin']) as r;

select is_empty(
    $$select c.oid::regclass::text from pg_catalog.pg_class as c
      inner join pg_catalog.pg_attribute as a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped
      where c.relnamespace = 'jobctl'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
        and not c.relrowsecurity$$,
    'every table with tenant rows has row-level security on'
);

select set_eq(
    $$select c.relname::text || ' ' || r.rolname || ' ' || p.privilege_type
      from pg_catalog.pg_class as c
      cross join pg_catalog.pg_roles as r
      cross join (values ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE')) as p (privilege_type)
      where c.relnamespace in ('jobctl'::regnamespace, 'jobctl_archive'::regnamespace) and c.relkind in ('r', 'p', 'v')
        and r.rolname like 'jobctl\_%'
        and has_table_privilege(r.oid, c.oid, p.privilege_type)$$,
    $$select t || ' jobctl_' || r || ' SELECT'
      from unnest(array['job', 'job_archive', 'tenant', 'schedule', 'audit_log']) as t
      cross join unnest(array['reader', 'writer', 'api', 'admin']) as r$$,
    'the roles may only SELECT the five tenant tables (readers and the roles that include them), nothing else'
);

select is_empty(
    $$select c.oid::regclass::text from pg_catalog.pg_class as c
      where c.relnamespace = 'jobctl'::regnamespace and c.relkind in ('r', 'p')
        and has_table_privilege('jobctl_reader', c.oid, 'SELECT')
        and not exists (select from pg_catalog.pg_policy as y where y.polrelid = c.oid)$$,
    'every table a reader may query has a row-level security policy'
);

select is_empty(
    $$select c.oid::regclass::text from pg_catalog.pg_class as c, aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) as a
      where c.relnamespace in ('jobctl'::regnamespace, 'jobctl_archive'::regnamespace) and a.grantee = 0$$,
    'no table in jobctl or jobctl_archive grants anything to PUBLIC'
);

-- A login outside jobctl's roles could fill the shared lock table (advisory locks,
-- temporary tables) and stop every submit with 53200 (tests/test_hostile.py runs the attack)
select is_empty(
    $$select x.priv from unnest(array['CONNECT', 'TEMPORARY']) as x (priv)
      where has_database_privilege('public', current_database(), x.priv)$$,
    'PUBLIC may neither connect to the database nor make temporary tables in it'
);

select set_eq(
    $$select r.rolname::text from pg_catalog.pg_roles as r
      where r.rolname like 'jobctl\_%' and not r.rolcanlogin and r.rolname not in ('jobctl_owner', 'jobctl_crypto')
        and has_database_privilege(r.oid, current_database(), 'CONNECT')
        and not has_database_privilege(r.oid, current_database(), 'TEMPORARY')$$,
    array['jobctl_reader', 'jobctl_writer', 'jobctl_worker', 'jobctl_api', 'jobctl_admin'],
    'each of the five roles (and so each login in one) may connect, and none makes temporary tables'
);

select is(
    (
        select count(*)::integer from pg_catalog.pg_proc as p
        where p.pronamespace = 'pg_catalog'::regnamespace and p.proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$'
    ),
    16,
    'the advisory lock functions: eight kinds, each for one bigint or two integers'
);

select is_empty(
    $$select p.oid::regprocedure::text from pg_catalog.pg_proc as p
      where p.pronamespace = 'pg_catalog'::regnamespace and p.proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$'
        and (has_function_privilege('public', p.oid, 'EXECUTE')
             or has_function_privilege('jobctl_admin', p.oid, 'EXECUTE'))$$,
    'neither PUBLIC nor any jobctl role may take an advisory lock'
);

select * from finish();
rollback;
