-- jobctl._xid8: the full (epoch-qualified) id of a recent transaction from its 32-bit xid, as
-- pg_xact_status takes it: the one nearest to the next id of the current snapshot (within 2^31
-- either way: a transaction that began after the snapshot may be ahead of it). Takes no transaction
-- id itself (pg_current_snapshot, not pg_current_xact_id).
create or replace function jobctl._xid8(p_xid xid)
returns xid8
language sql
stable
as $$
    select (n.next + ((p_xid::text::bigint - n.next % 4294967296 + 6442450944) % 4294967296 - 2147483648))::text::xid8
    from (select pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::bigint as next) as n
$$;
