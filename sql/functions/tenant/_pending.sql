-- jobctl._pending: a max_pending tenant's unfinished jobs, from its counters:
-- admitted less finished, plus the offset the recount sets. NULL for a tenant without max_pending.
create or replace function jobctl._pending(p_tenant jobctl.tenant)
returns bigint
language sql
stable
as $$
    select coalesce(pg_catalog.pg_sequence_last_value(p_tenant.admitted), 0)
        - coalesce(pg_catalog.pg_sequence_last_value(p_tenant.finished), 0) + p_tenant.pending_offset
    where p_tenant.admitted is not null
$$;
