-- jobctl._archive_units: what `jobctl archive run` (python/jobctl/archive.py) exports, in the order it
-- exports them: each day of the database archive (a partition of jobctl.job_archive) whose upper
-- bound is past retention.archive, oldest first, with its events' partition of the same bounds; then
-- the archive's default partition (jobs carried over past their day that reached the archive after
-- their day's partition), whose jobs created before now() - retention.archive leave as a late file.
-- `before`: the unit's jobs are those created before it (the function given the unit again passes it
-- back, so that every step of the unit sees the same cutoff). Zero rows when no object archive is set
-- (retention.archive_url NULL); with one, at least the late unit. As the schema owner (granted to no
-- role). Reads: retention, the catalog.
create or replace function jobctl._archive_units()
returns table (archive_url text, part regclass, events regclass, before timestamptz, late boolean)
language sql
stable
as $$
    select u.archive_url, u.part, u.events, u.before, u.late
    from (
        select r.archive_url, j.part, e.part as events, j.upper_bound as before, false as late
        from jobctl.retention as r
        cross join jobctl._partitions(array['jobctl.job_archive']::regclass[]) as j
        left join jobctl._partitions(array['jobctl._event_archive']::regclass[]) as e
            on e.lower_bound = j.lower_bound
        where r.archive_url is not null and j.upper_bound <= now() - r.archive
        union all
        select r.archive_url, 'jobctl.job_archive_default'::regclass, null, now() - r.archive, true
        from jobctl.retention as r
        where r.archive_url is not null
    ) as u
    order by u.late, u.before
$$;
