-- jobctl._horizon_held: whether a client transaction open for more than p_for holds a snapshot or
-- a transaction ID, and so holds the xmin horizon back: VACUUM cannot remove the rows claims and
-- completions leave dead, nor can index scans mark their entries dead, so jobctl.tick then rotates
-- the slot partitions (jobctl._rotate_periods). xact_start is shown to the function's owner, a
-- superuser or a member of pg_read_all_stats; to anyone else the horizon never looks held.
create or replace function jobctl._horizon_held(p_for interval default '1 second')
returns boolean
language sql
stable
as $$
    select exists (
        select from pg_catalog.pg_stat_activity as a
        where a.backend_type = 'client backend' and a.xact_start < clock_timestamp() - p_for
            and (a.backend_xmin is not null or a.backend_xid is not null)
    )
$$;
