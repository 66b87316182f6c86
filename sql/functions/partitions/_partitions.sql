-- jobctl._partitions: the range partitions of the given parents (the default partitions left out)
-- with their partition-key column, bounds, and the state of the seal that maintain_partitions
-- puts on a partition whose day is over: a CHECK constraint named <partition>_bound restating its
-- bounds, so that ATTACH to an archive parent needs no scan. sealed: NULL none, false NOT VALID,
-- true validated.
create or replace function jobctl._partitions(p_parents regclass[])
returns setof jobctl._partition
language sql
stable
as $$
    select i.inhparent::regclass, c.oid::regclass, a.attname::text,
        b.bound[1]::timestamptz, b.bound[2]::timestamptz, c.relname || '_bound', k.convalidated
    from pg_catalog.pg_inherits as i
    inner join pg_catalog.pg_class as c on c.oid = i.inhrelid
    inner join pg_catalog.pg_partitioned_table as t on t.partrelid = i.inhparent
    inner join pg_catalog.pg_attribute as a on a.attrelid = i.inhparent and a.attnum = t.partattrs[0]
    cross join lateral regexp_match(
        pg_catalog.pg_get_expr(c.relpartbound, 0), 'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)'
    ) as b (bound)
    left join pg_catalog.pg_constraint as k on k.conrelid = c.oid and k.conname = c.relname || '_bound'
    where i.inhparent = any(p_parents) and b.bound is not null
$$;
