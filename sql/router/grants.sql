-- Who may call the router: the shards' roles (sql/grants.sql), with the same functions each. PL/Proxy
-- connects to a shard as the calling role when the shard's connect string names no user, so the
-- shard's own grants and tenant rule apply there too; the roles must exist on the shards (they do:
-- every shard is a jobctl database).
do $$
declare
    v_role text;
    v_grant record;
begin
    foreach v_role in array array['jobctl_reader', 'jobctl_writer', 'jobctl_worker', 'jobctl_admin'] loop
        if not exists (select from pg_catalog.pg_roles as r where r.rolname = v_role) then
            execute format('create role %I nologin', v_role);
        end if;
        execute format('grant usage on schema jobctl, jobctl_router, plproxy to %I', v_role);
    end loop;
    execute 'grant jobctl_reader to jobctl_writer';
    execute 'grant jobctl_writer, jobctl_worker to jobctl_admin';
    -- as on the shards (sql/grants.sql): only the roles connect, and no login takes advisory locks
    -- or makes temporary tables, which fill the cluster's lock table
    if (select r.rolsuper from pg_catalog.pg_roles as r where r.rolname = current_user) then
        execute format('revoke connect, temporary on database %I from public', current_database());
        execute format('grant connect on database %I to jobctl_reader, jobctl_worker, jobctl_admin', current_database());
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
    revoke all on all functions in schema jobctl, jobctl_router, plproxy from public;
    for v_grant in
        select p.oid::regprocedure as fn, g.grantee
        from (values
            ('get_job', 'jobctl_reader'), ('locate_job', 'jobctl_reader'), ('list_jobs', 'jobctl_reader'),
            ('job_history', 'jobctl_reader'),
            ('find_jobs', 'jobctl_reader'), ('stats', 'jobctl_reader'), ('list_tenants', 'jobctl_reader'),
            ('list_schedules', 'jobctl_reader'), ('schedule_runs', 'jobctl_reader'),
            ('list_concurrency_limits', 'jobctl_reader'), ('get_batch', 'jobctl_reader'),
            ('get_batch', 'jobctl_worker'),
            ('submit_job', 'jobctl_writer'), ('submit_jobs', 'jobctl_writer'), ('cancel_job', 'jobctl_writer'),
            ('retry_job', 'jobctl_writer'), ('put_schedule', 'jobctl_writer'), ('drop_schedule', 'jobctl_writer'),
            ('pause_schedule', 'jobctl_writer'), ('resume_schedule', 'jobctl_writer'),
            ('run_schedule', 'jobctl_writer'),
            ('claim_job', 'jobctl_worker'), ('heartbeat', 'jobctl_worker'), ('complete_job', 'jobctl_worker'),
            ('complete_jobs', 'jobctl_worker'), ('fail_job', 'jobctl_worker'), ('release_job', 'jobctl_worker'),
            ('save_step', 'jobctl_worker'), ('sleep_job', 'jobctl_worker'), ('await_event', 'jobctl_worker'),
            ('await_job', 'jobctl_worker'), ('job_steps', 'jobctl_worker'), ('job_steps', 'jobctl_reader'),
            ('emit_event', 'jobctl_writer'),
            ('put_tenant', 'jobctl_admin'), ('pause_tenant', 'jobctl_admin'),
            ('put_concurrency_limit', 'jobctl_admin')
        ) as g (name, grantee)
        inner join pg_catalog.pg_proc as p on p.proname = g.name and p.pronamespace = 'jobctl'::regnamespace
        order by p.oid, g.grantee
    loop
        execute format('grant execute on function %s to %I', v_grant.fn, v_grant.grantee);
    end loop;
    -- the routing and configuration functions run inside those calls, as the caller
    for v_grant in
        select p.oid::regprocedure as fn from pg_catalog.pg_proc as p
        where p.pronamespace in ('jobctl_router'::regnamespace, 'plproxy'::regnamespace)
    loop
        execute format(
            'grant execute on function %s to jobctl_reader, jobctl_writer, jobctl_worker, jobctl_admin', v_grant.fn
        );
    end loop;
    -- the routing and cluster functions are SECURITY DEFINER: no role holds a privilege on the
    -- router's tables (a writer could insert placements, anyone read the shards' connect strings)
    revoke all on all tables in schema jobctl_router
    from public, jobctl_reader, jobctl_writer, jobctl_worker, jobctl_admin;
    revoke all on all sequences in schema jobctl_router
    from public, jobctl_reader, jobctl_writer, jobctl_worker, jobctl_admin;
    revoke execute on function jobctl_router.put_shard(integer, text)
    from public, jobctl_reader, jobctl_writer, jobctl_worker, jobctl_admin;
    grant usage on foreign data wrapper plproxy to jobctl_reader, jobctl_writer, jobctl_worker, jobctl_admin;
end
$$;
