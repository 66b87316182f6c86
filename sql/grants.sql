-- Who may do what: the roles, their privileges and the row-level security policies, in one place,
-- re-applied at the end of every migrate (in its transaction, so a function the run created is
-- never callable by PUBLIC after the commit). The rules and how to map a service to its tenants:
-- docs/security.md. The catalog test sql/tests/security.sql checks what this file makes.
--
-- jobctl_reader  read jobs, history, stats, schedules of its tenants (functions, and the tables
--                below through row-level security)
-- jobctl_writer  a reader that also submits, cancels and retries jobs, writes schedules and
--                forgets data subjects
-- jobctl_worker  claims jobs and reports on them (heartbeat, complete, fail, release) and itself
--                (worker_beat, worker_gone)
-- jobctl_api     the HTTP API's login role: a writer that acts only through API tokens
--                (jobctl.authenticate), since it is granted no tenant itself; also queue settings
--                and the tenant pages (pause_tenant, tokens, grants, health) for the tokens
--                whose scopes allow them
-- jobctl_admin   everything, for every tenant: tenants, tokens, grants, health
-- The periodic functions maintain_partitions, reap_expired_leases and expand_schedules run as the
-- schema owner, from pg_cron or jobctl.tick: they are SECURITY INVOKER (pg_partman sets search_path
-- for the session, which a pinned search_path would leak to the caller) and granted to no role.
-- jobctl.tick (which calls no pg_partman) is SECURITY DEFINER and granted to workers, which drive it
-- a few times a second.
-- A role acts for the tenants granted to it with jobctl.grant_tenant (jobctl._acting_tenants).
do $$
declare
    v_role text;
    v_grant record;
begin
    foreach v_role in array array['jobctl_reader', 'jobctl_writer', 'jobctl_worker', 'jobctl_api', 'jobctl_admin'] loop
        if not exists (select from pg_catalog.pg_roles as r where r.rolname = v_role) then
            execute format('create role %I nologin', v_role);
        end if;
        execute format('grant usage on schema jobctl to %I', v_role);
    end loop;
    grant jobctl_reader to jobctl_writer;
    grant jobctl_writer to jobctl_api;
    grant jobctl_writer, jobctl_worker to jobctl_admin;

    -- The database: a login outside jobctl's roles neither connects nor, if a DBA grants it CONNECT
    -- by name (a monitoring login), takes advisory locks or makes temporary tables. Each of those
    -- fills the cluster's shared lock table, after which every tenant's submit fails with 53200
    -- (docs/security.md, Hostile neighbours). The database's owner and superusers (the schema owner,
    -- which runs pg_cron's jobs and pg_partman's maintenance, is one) keep all three. Only a
    -- superuser may change the built-in functions' privileges: a migrate by another role leaves all
    -- of it, and doctor's 'database access' check fails until a superuser runs jobctl migrate.
    if (select r.rolsuper from pg_catalog.pg_roles as r where r.rolname = current_user) then
        execute format('revoke connect, temporary on database %I from public', current_database());
        execute format('grant connect on database %I to jobctl_reader, jobctl_worker, jobctl_api, jobctl_admin',
            current_database());
        for v_grant in
            select p.oid::regprocedure as fn
            from pg_catalog.pg_proc as p
            where p.pronamespace = 'pg_catalog'::regnamespace
                and p.proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$'
            order by p.oid
        loop
            execute format('revoke execute on function %s from public', v_grant.fn);
        end loop;
    end if;

    -- nothing in the schema is callable by PUBLIC or left over from an earlier run; then each public
    -- function goes to its role (functions are SECURITY DEFINER: the roles hold no privilege on the
    -- tables behind them)
    revoke all on all functions in schema jobctl
    from public, jobctl_reader, jobctl_writer, jobctl_worker, jobctl_api, jobctl_admin;
    for v_grant in
        select p.oid::regprocedure as fn, g.grantee
        from (values
            ('get_job', 'jobctl_reader'), ('list_jobs', 'jobctl_reader'), ('job_history', 'jobctl_reader'),
            ('archived_job', 'jobctl_reader'), ('open_archived_payload', 'jobctl_reader'), ('locate_job', 'jobctl_reader'),
            ('stats', 'jobctl_reader'), ('claim_metrics', 'jobctl_reader'), ('list_schedules', 'jobctl_reader'),
            ('list_tenants', 'jobctl_reader'), ('cron_next', 'jobctl_reader'), ('list_concurrency_limits', 'jobctl_reader'),
            ('count_jobs', 'jobctl_reader'), ('find_jobs', 'jobctl_reader'), ('job_counts', 'jobctl_reader'), ('job_rates', 'jobctl_reader'),
            ('minute_rates', 'jobctl_reader'), ('workflow_jobs', 'jobctl_reader'), ('next_fire_times', 'jobctl_reader'),
            ('job_overview', 'jobctl_reader'), ('fairness', 'jobctl_reader'), ('histogram_bounds', 'jobctl_reader'),
            ('histogram_quantile', 'jobctl_reader'), ('schedule_runs', 'jobctl_reader'), ('watch_job', 'jobctl_reader'),
            ('count_job_states', 'jobctl_reader'), ('caller_access', 'jobctl_reader'), ('job_series', 'jobctl_reader'),
            ('_acting_tenants', 'jobctl_reader'),  -- the row-level security policies call it as the reader
            -- workers serve every tenant: list_workers refuses any caller but one acting for every tenant
            ('list_workers', 'jobctl_reader'), ('list_audit', 'jobctl_reader'),
            ('submit_job', 'jobctl_writer'), ('submit_jobs', 'jobctl_writer'), ('cancel_job', 'jobctl_writer'),
            ('retry_job', 'jobctl_writer'), ('put_schedule', 'jobctl_writer'), ('drop_schedule', 'jobctl_writer'),
            ('forget_subject', 'jobctl_writer'), ('retry_jobs', 'jobctl_writer'), ('cancel_jobs', 'jobctl_writer'),
            ('delete_jobs', 'jobctl_writer'), ('submit_workflow', 'jobctl_writer'), ('submit_batch', 'jobctl_writer'),
            ('parent_results', 'jobctl_reader'), ('get_batch', 'jobctl_reader'),
            ('parent_results', 'jobctl_worker'), ('get_batch', 'jobctl_worker'),
            ('pause_schedule', 'jobctl_writer'), ('resume_schedule', 'jobctl_writer'), ('run_schedule', 'jobctl_writer'),
            ('claim_job', 'jobctl_worker'), ('heartbeat', 'jobctl_worker'), ('complete_job', 'jobctl_worker'),
            ('complete_jobs', 'jobctl_worker'), ('fail_job', 'jobctl_worker'), ('release_job', 'jobctl_worker'),
            ('tick', 'jobctl_worker'), ('hint_tags', 'jobctl_worker'), ('hint_senders', 'jobctl_worker'),
            ('claimable_weight', 'jobctl_worker'), ('slot_shares', 'jobctl_worker'), ('hint_window', 'jobctl_worker'),
            ('job_actions', 'jobctl_reader'),
            ('worker_beat', 'jobctl_worker'), ('worker_gone', 'jobctl_worker'),
            ('save_step', 'jobctl_worker'), ('sleep_job', 'jobctl_worker'), ('await_event', 'jobctl_worker'),
            ('await_job', 'jobctl_worker'), ('job_steps', 'jobctl_worker'), ('job_steps', 'jobctl_reader'),
            ('emit_event', 'jobctl_writer'),
            ('authenticate', 'jobctl_api'),
            -- tenant administration through API tokens (tenants:read, tenants:write): each function acts
            -- for the token's tenants only, and health_checks for every-tenant callers only
            ('pause_tenant', 'jobctl_api'), ('list_api_tokens', 'jobctl_api'), ('list_tenant_grants', 'jobctl_api'),
            ('health_checks', 'jobctl_api'),
            ('put_tenant', 'jobctl_admin'), ('pause_tenant', 'jobctl_admin'), ('put_concurrency_limit', 'jobctl_admin'),
            -- queues are shared: the functions refuse any caller but one acting for every tenant
            ('put_queue', 'jobctl_admin'), ('pause_queue', 'jobctl_admin'), ('resume_queue', 'jobctl_admin'),
            ('list_queues', 'jobctl_admin'), ('put_queue', 'jobctl_api'), ('pause_queue', 'jobctl_api'),
            ('resume_queue', 'jobctl_api'), ('list_queues', 'jobctl_api'), ('health_checks', 'jobctl_admin'),
            ('queue_overview', 'jobctl_admin'), ('queue_overview', 'jobctl_api'),
            ('create_api_token', 'jobctl_admin'),
            ('revoke_api_token', 'jobctl_admin'), ('list_api_tokens', 'jobctl_admin'), ('authenticate', 'jobctl_admin'),
            ('grant_tenant', 'jobctl_admin'), ('revoke_tenant', 'jobctl_admin'),
            ('list_tenant_grants', 'jobctl_admin'), ('recount_counters', 'jobctl_admin')
        ) as g (name, grantee)
        inner join pg_catalog.pg_proc as p on p.proname = g.name and p.pronamespace = 'jobctl'::regnamespace
        order by p.oid, g.grantee  -- one order every run: a function's privileges list in it (pg_dump equal)
    loop
        execute format('grant execute on function %s to %I', v_grant.fn, v_grant.grantee);
    end loop;

    -- Readers may also query the tenant tables directly; row-level security shows them their
    -- tenants' rows only. The other tables (queues, leases, tokens, grants) have no policy: with
    -- row-level security on, a role that is not their owner sees none of their rows even if
    -- someone grants it SELECT. Enabled and created only once: ALTER TABLE locks the table.
    revoke all on all tables in schema jobctl
    from public, jobctl_reader, jobctl_writer, jobctl_worker, jobctl_api, jobctl_admin;
    grant select on jobctl.job, jobctl.job_archive, jobctl.tenant, jobctl.schedule, jobctl.audit_log to jobctl_reader;
    for v_grant in
        select c.oid::regclass as tbl, c.relrowsecurity as secured,
            c.relname in ('job', 'job_archive', 'tenant', 'schedule', 'audit_log') as readable,
            exists (select from pg_catalog.pg_policy as y where y.polrelid = c.oid) as has_policy
        from pg_catalog.pg_class as c
        where c.relnamespace = 'jobctl'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
            and c.relname in (
                'job', 'job_archive', 'tenant', 'schedule', 'audit_log', '_ready', '_running', '_delayed',
                '_event', '_event_archive', '_api_token', '_role_tenant', '_held', 'concurrency_limit', 'queue',
                '_lock', '_tenant_lock', '_hint_key', '_stat_delta', '_stat', '_stat_minute', '_stat_probed',
                '_waiting', '_edge', '_recheck', 'batch', '_step', '_emitted', '_awaiting', '_spawn'
            )
    loop
        if not v_grant.secured then
            execute format('alter table %s enable row level security', v_grant.tbl);
        end if;
        if v_grant.readable and not v_grant.has_policy then
            execute format(
                'create policy tenant_rows on %s for select to jobctl_reader using (
                    (select jobctl._acting_tenants(''jobs:read'')) is null
                    or tenant_id = any(coalesce((select jobctl._acting_tenants(''jobs:read'')), ''{}'')))',
                v_grant.tbl
            );
        end if;
    end loop;
end
$$;
