-- PL/Proxy's cluster `jobctl`, read from jobctl_router.shard. It always has 64 partitions, partition
-- k being shard k, so that a routing function's value is the shard number itself (PL/Proxy maps a
-- value to partition value & 63 and needs a power of 2 without modular_mapping). A number with no
-- shard points at the lowest shard: a by-id call for an id no shard issued finds nothing there, as
-- on any shard. Equal connect strings share one connection, and RUN ON ALL runs once per connection.

-- jobctl_router.put_shard: shard p_shard's connect string, as `jobctl shards init-router` sets it
-- (as the router's owner: granted to no role). A connect string holds no password: PL/Proxy calls
-- plproxy.get_cluster_partitions as the caller, so any role of the router may read what it returns;
-- passwords go in the router's server's ~/.pgpass (docs/operations.md, Sharding). Returns true when
-- it changed. Writes: shard (its trigger: cluster_version).
create or replace function jobctl_router.put_shard(p_shard integer, p_connstr text)
returns boolean
language plpgsql
as $$
begin
    if p_connstr ~* '(^|\s)password\s*=' or p_connstr ~* '^postgres(ql)?://[^/@]*:[^/@]*@' then
        raise exception using errcode = 'JC001',
            message = format('shard %s: the connect string holds a password', p_shard),
            detail = 'field: connstr',
            hint = 'Any role of the router can read it: put the password in the router''s server''s ~/.pgpass '
                || '(the OS user postgres) instead.';
    end if;
    insert into jobctl_router.shard (shard, connstr) values (p_shard, p_connstr)
    on conflict (shard) do update set connstr = excluded.connstr where shard.connstr <> excluded.connstr;
    return found;
end
$$;

-- jobctl_router.shard_count: how many shards the router has (`jobctl shards init-router` reports it).
-- As the router's owner (granted to no role). Reads: shard.
create or replace function jobctl_router.shard_count()
returns integer
language sql
stable
as $$
    select count(*)::integer from jobctl_router.shard
$$;

-- jobctl_router._bump_version: every change of the shard table makes PL/Proxy reload the cluster
create or replace function jobctl_router._bump_version()
returns trigger
language plpgsql
as $$
begin
    update jobctl_router.cluster_version set counter = counter + 1;
    return null;
end
$$;

create or replace trigger shard_changed
after insert or update or delete or truncate on jobctl_router.shard
for each statement execute function jobctl_router._bump_version();

create or replace function plproxy.get_cluster_version(cluster_name text)
returns integer
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if cluster_name = 'jobctl' then
        return (select v.counter from jobctl_router.cluster_version as v);
    end if;
    raise exception using errcode = 'JC001', message = format('unknown cluster %s', cluster_name),
        detail = 'field: cluster_name', hint = 'The router has one cluster: jobctl.';
end
$$;

create or replace function plproxy.get_cluster_partitions(cluster_name text)
returns setof text
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    if cluster_name <> 'jobctl' then
        raise exception using errcode = 'JC001', message = format('unknown cluster %s', cluster_name),
            detail = 'field: cluster_name', hint = 'The router has one cluster: jobctl.';
    end if;
    if not exists (select from jobctl_router.shard) then
        raise exception using errcode = 'JC001', message = 'the router has no shards',
            detail = 'field: jobctl_router.shard', hint = 'Add them: jobctl shards init-router --shard N=DSN ...';
    end if;
    return query
    select coalesce(s.connstr, (select f.connstr from jobctl_router.shard as f order by f.shard limit 1))
    from generate_series(0, 63) as p (n)
    left join jobctl_router.shard as s on s.shard = p.n
    order by p.n;
end
$$;

create or replace function plproxy.get_cluster_config(
    in cluster_name text, out key text, out val text
)
returns setof record
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    -- a connection older than 30 minutes is opened anew (a shard's restart is noticed sooner: a failed
    -- call drops its connection)
    select 'connection_lifetime', '1800'
$$;
