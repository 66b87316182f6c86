-- jobctl.health_checks: what `jobctl doctor` reports, one row per check with a verdict (ok, warn,
-- fail). Read-only; reads catalogs, pg_stat views and, when present, pg_cron's tables. The health of
-- the whole scheduler: only for callers acting for every tenant (an API token: tenants:read).
create or replace function jobctl.health_checks()
returns table (check_name text, verdict text, observed text, detail text)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_column
declare
    v_cron_db boolean := exists (select from pg_catalog.pg_extension where extname = 'pg_cron');
    v_job text;
    v_active boolean;
    v_last_status text;
    v_last_end timestamptz;
    v_overdue interval;
    v_n bigint;
    v_age bigint;
    v_ahead timestamptz;
    v_parent text;
    v_public bigint;
    v_bypass bigint;
    v_stale bigint;
    r record;
begin
    perform jobctl._require_every_tenant('tenants:read', 'the health of the scheduler');
    check_name := 'extension pg_partman';
    select e.extversion into observed from pg_catalog.pg_extension as e where e.extname = 'pg_partman';
    verdict := case when observed is null then 'fail' else 'ok' end;
    detail := case when observed is null then 'pg_partman is missing: partitions are not made ahead' end;
    return next;

    check_name := 'extension pg_cron';
    select e.extversion into observed from pg_catalog.pg_extension as e where e.extname = 'pg_cron';
    verdict := case when observed is null then 'warn' else 'ok' end;
    detail := case when observed is null
        then 'pg_cron is not in this database: run jobctl.tick() and maintain_partitions() yourself (manual mode)' end;
    return next;

    if v_cron_db then
        check_name := 'pg_cron launcher';
        select count(*) into v_n from pg_catalog.pg_stat_activity as a where a.backend_type = 'pg_cron launcher';
        observed := case when v_n > 0 then 'running' else 'not running' end;
        verdict := case when v_n > 0 then 'ok' else 'fail' end;
        detail := case when v_n = 0 then 'add pg_cron to shared_preload_libraries and restart PostgreSQL' end;
        return next;

        foreach v_job in array array['jobctl-tick', 'jobctl-partitions', 'jobctl-cron-history'] loop
            check_name := 'cron job ' || v_job;
            execute $q$
                select j.active,
                    (select d.status from cron.job_run_details as d where d.jobid = j.jobid order by d.runid desc limit 1),
                    (select d.end_time from cron.job_run_details as d where d.jobid = j.jobid order by d.runid desc limit 1)
                from cron.job as j where j.jobname = $1
            $q$ into v_active, v_last_status, v_last_end using v_job;
            observed := case
                when v_active is null then 'missing'
                when not v_active then 'inactive'
                else coalesce(v_last_status || ' ' || to_char(v_last_end at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS"Z"'), 'not run yet')
            end;
            verdict := case
                when v_active is null or not v_active or v_last_status = 'failed' then 'fail'
                when v_job = 'jobctl-tick' and v_last_end < now() - interval '3 minutes' then 'warn'
                else 'ok'
            end;
            detail := case verdict
                when 'fail' then 'run jobctl migrate to register it; see cron.job_run_details for failures'
                when 'warn' then 'the per-minute tick has not finished in 3 minutes: is the pg_cron launcher busy or stopped?'
            end;
            return next;
        end loop;
    end if;

    check_name := 'reaper lag';
    select max(now() - r.lease_expires_at), count(*) into v_overdue, v_n
    from jobctl._running as r where r.lease_expires_at < now();
    observed := format('%s expired leases, oldest %s s ago', v_n, coalesce(round(extract(epoch from v_overdue)), 0));
    verdict := case
        when v_overdue > interval '60 seconds' then 'fail'
        when v_overdue > interval '30 seconds' then 'warn'
        else 'ok'
    end;
    detail := case when verdict <> 'ok'
        then 'expired leases are reaped by claims (once a second) and the per-minute tick: are workers and pg_cron running?' end;
    return next;

    -- Bloat: the heap's size against what its live rows need (pg_stats widths + tuple overhead,
    -- at the table's fillfactor); an estimate, and only for tables past 8 MB.
    -- (_ready's and _running's figures are the sums over their slot partitions)
    for r in
        select t.relname, sum(s.n_live_tup) as n_live_tup, sum(s.n_dead_tup) as n_dead_tup,
            sum(pg_catalog.pg_total_relation_size(c.oid)) as bytes,
            sum(pg_catalog.pg_relation_size(c.oid)) as heap_bytes,
            max(greatest(s.last_autovacuum, s.last_vacuum)) as vacuumed,
            sum(s.n_live_tup * (
                (select sum(st.avg_width) from pg_catalog.pg_stats as st
                 where st.schemaname = 'jobctl' and st.tablename = c.relname) + 28
            ) * 100.0 / coalesce(
                (select substring(o.opt from 'fillfactor=(\d+)')::int
                 from unnest(c.reloptions) as o (opt) where o.opt like 'fillfactor=%'), 100
            )) as needed_bytes
        from unnest(array['_ready', '_delayed', '_running', '_lane_cache']) as t (relname)
        cross join lateral (
            select ('jobctl.' || t.relname)::regclass::oid as oid
            union all
            select i.inhrelid from pg_catalog.pg_inherits as i where i.inhparent = ('jobctl.' || t.relname)::regclass
        ) as x
        join pg_catalog.pg_class as c on c.oid = x.oid and c.relkind = 'r'
        join pg_catalog.pg_stat_user_tables as s on s.relid = c.oid
        group by t.relname
        order by t.relname
    loop
        check_name := 'dead tuples ' || r.relname;
        observed := format('%s live, %s dead, %s', r.n_live_tup, r.n_dead_tup, pg_catalog.pg_size_pretty(r.bytes));
        verdict := case
            when r.n_dead_tup > greatest(100000, 10 * r.n_live_tup) then 'fail'
            when r.n_dead_tup > greatest(20000, 2 * r.n_live_tup) then 'warn'
            else 'ok'
        end;
        detail := case when verdict <> 'ok' then format(
            'autovacuum last ran %s; an old snapshot (see below) keeps dead rows from being removed',
            coalesce(to_char(r.vacuumed at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS"Z"'), 'never')
        ) end;
        return next;

        check_name := 'bloat ' || r.relname;
        observed := case
            when r.needed_bytes is null then format(
                'heap %s; live rows not measured yet (table not analyzed)', pg_catalog.pg_size_pretty(r.heap_bytes)
            )
            else format(
                'heap %s for %s of live rows (estimate)', pg_catalog.pg_size_pretty(r.heap_bytes),
                pg_catalog.pg_size_pretty(r.needed_bytes::bigint)
            )
        end;
        verdict := case
            when r.heap_bytes > 8388608 and r.heap_bytes > 10 * greatest(coalesce(r.needed_bytes, 0), 1048576) then 'warn'
            else 'ok'
        end;
        detail := case when verdict <> 'ok'
            then 'the table is mostly free space: harmless for inserts (VACUUM made it reusable), but scans read it; '
                || 'it shrinks only by VACUUM FULL or pg_repack, or by itself if the free pages sit at the end' end;
        return next;
    end loop;

    check_name := 'transaction ID age';
    select age(d.datfrozenxid) into v_age from pg_catalog.pg_database as d where d.datname = current_database();
    observed := format('age(datfrozenxid) = %s', v_age);
    verdict := case
        when v_age > 1000000000 then 'fail'
        when v_age > current_setting('autovacuum_freeze_max_age')::bigint * 1.5 then 'warn'
        else 'ok'
    end;
    detail := case when verdict <> 'ok'
        then 'anti-wraparound vacuum is falling behind: look for old snapshots and long VACUUMs' end;
    return next;

    check_name := 'oldest snapshot';
    select max(age(a.backend_xmin)), max(now() - a.xact_start) into v_age, v_overdue
    from pg_catalog.pg_stat_activity as a
    where a.backend_xmin is not null and a.pid <> pg_catalog.pg_backend_pid();
    observed := format('oldest transaction %s s, xmin age %s',
        coalesce(round(extract(epoch from v_overdue)), 0), coalesce(v_age, 0));
    verdict := case
        when v_overdue > interval '1 hour' then 'fail'
        when v_overdue > interval '5 minutes' then 'warn'
        else 'ok'
    end;
    detail := case when verdict <> 'ok'
        then 'a long transaction holds back the xmin horizon: VACUUM cannot remove dead queue rows (pg_stat_activity)' end;
    return next;

    foreach v_parent in array array['jobctl.job', 'jobctl._event'] loop
        check_name := 'partitions ahead ' || v_parent;
        select max((regexp_match(pg_catalog.pg_get_expr(c.relpartbound, 0), 'TO \(''([^'']+)''\)'))[1]::timestamptz)
        into v_ahead
        from pg_catalog.pg_inherits as i
        join pg_catalog.pg_class as c on c.oid = i.inhrelid
        where i.inhparent = v_parent::regclass
            and pg_catalog.pg_get_expr(c.relpartbound, 0) <> 'DEFAULT';
        observed := format('partitions up to %s', coalesce(to_char(v_ahead, 'YYYY-MM-DD'), 'none'));
        verdict := case
            when v_ahead is null or v_ahead < now() + interval '1 day' then 'fail'
            when v_ahead < now() + interval '3 days' then 'warn'
            else 'ok'
        end;
        detail := case when verdict <> 'ok'
            then 'run jobctl.maintain_partitions(); rows past the last partition land in the default partition' end;
        return next;
    end loop;

    -- jobs carried over past their day (jobctl._retire_partitions) belong there; a recent one does not
    check_name := 'default partition rows';
    select count(*) into v_n from (
        select from jobctl.job_default as d
        where d.created_at >= now() - (select r.hot from jobctl.retention as r)
        limit 1000
    ) as x;
    observed := format('%s recent rows in jobctl.job_default', v_n);
    verdict := case when v_n > 0 then 'warn' else 'ok' end;
    detail := case when v_n > 0
        then 'jobs created where no partition existed: run partman.partition_data_time for jobctl.job' end;
    return next;

    check_name := 'notification queue';
    observed := format('%s%% used', round(pg_catalog.pg_notification_queue_usage()::numeric * 100, 1));
    verdict := case when pg_catalog.pg_notification_queue_usage() > jobctl._hint_queue_limit() then 'warn' else 'ok' end;
    detail := case when verdict <> 'ok'
        then 'submits send no wake-up hints (workers find jobs by polling) until a listener reads its notifications'
            || ' (pg_stat_activity: LISTEN sessions idle in transaction; any login may LISTEN)' end;
    return next;

    -- what sql/grants.sql makes, still so: a grant by hand, or a function made outside jobctl migrate,
    -- can open a function to everyone; a reader that bypasses row-level security sees every tenant
    check_name := 'privileges';
    select
        (select count(*) from pg_catalog.pg_proc as p
         where p.pronamespace = 'jobctl'::regnamespace and pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE')),
        (select count(*) from pg_catalog.pg_roles as r
         where r.rolbypassrls and not r.rolsuper and pg_catalog.pg_has_role(r.oid, 'jobctl_reader', 'MEMBER')),
        (select count(*) from jobctl._role_tenant as g
         where not exists (select from pg_catalog.pg_roles as r where r.oid = g.role_oid))
    into v_public, v_bypass, v_stale;
    observed := format('%s functions executable by PUBLIC, %s readers bypassing row-level security, %s grants of dropped roles',
        v_public, v_bypass, v_stale);
    verdict := case when v_public > 0 then 'fail' when v_bypass + v_stale > 0 then 'warn' else 'ok' end;
    detail := case
        when v_public > 0 then 'run jobctl migrate: it revokes EXECUTE from PUBLIC on every jobctl function'
        when v_bypass > 0 then 'a role with BYPASSRLS in jobctl_reader reads every tenant''s rows: ALTER ROLE ... NOBYPASSRLS'
        when v_stale > 0 then 'delete from jobctl._role_tenant where role_oid not in (select oid from pg_roles)'
    end;
    return next;

    -- what sql/grants.sql makes of the database (a superuser's migrate): any login that connects and
    -- may take advisory locks or make temporary tables can fill the cluster's shared lock table, and
    -- then every submit fails with 53200; the lock table and the connection slots are the cluster's,
    -- so a database of the same cluster open to PUBLIC is a way in too
    check_name := 'database access';
    select
        (select count(*) from unnest(array['CONNECT', 'TEMPORARY']) as x (priv)
         where pg_catalog.has_database_privilege('public', current_database(), x.priv)),
        (select count(*) from pg_catalog.pg_proc as p
         where p.pronamespace = 'pg_catalog'::regnamespace and p.proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$'
             and pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE')),
        (select string_agg(d.datname, ', ' order by d.datname) from pg_catalog.pg_database as d
         where d.datallowconn and d.datname <> current_database()
             and pg_catalog.has_database_privilege('public', d.oid, 'CONNECT'))
    into v_public, v_n, v_parent;
    observed := format('PUBLIC may %s here, %s advisory lock functions executable by PUBLIC, other databases open to PUBLIC: %s',
        case when v_public > 0 then 'connect or make temporary tables' else 'not connect' end, v_n, coalesce(v_parent, 'none'));
    verdict := case when v_public + v_n > 0 then 'fail' when v_parent is not null then 'warn' else 'ok' end;
    detail := case
        when v_public + v_n > 0 then 'run jobctl migrate as a superuser: it revokes CONNECT, TEMPORARY and the advisory lock'
            || ' functions from PUBLIC (a login outside jobctl''s roles could fill the lock table: every submit fails)'
        when v_parent is not null then format('any login can fill the cluster''s shared lock table and connection slots'
            || ' from there: revoke connect on database %s from public', v_parent)
    end;
    return next;
end
$$;

comment on function jobctl.health_checks() is
'Health of the scheduler, one row per check with verdict ok, warn or fail: extensions, pg_cron
jobs and their last run, reaper lag, dead tuples and bloat (estimated) of the queue tables, transaction-ID age, the
oldest snapshot, partitions made ahead, rows in the default partition, the NOTIFY queue, privileges,
database access (docs/security.md). What jobctl doctor prints. Only for callers acting for every tenant (an API token needs
tenants:read).
Errors: 42501 the caller does not act for every tenant.
Example:
select check_name, verdict, observed from jobctl.health_checks() where verdict <> ''ok'';';
