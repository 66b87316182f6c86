-- 0003_job_fillfactor: job partitions keep half of each page free.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- A job row is updated twice (claim, completion). At the default fillfactor 100 a bulk-submitted
-- page is full, so both updates move the row to another page and add entries to every index
-- (measured: 2,950 of 40,000 updates HOT); at 50 the new versions fit beside the old ones and
-- the indexes are untouched (34,597 of 40,000 HOT, WAL per job 1,446 -> 1,024 bytes, and a smaller
-- partition: docs/design.md §6). pg_partman copies the template's options to each new partition;
-- on the existing ones the setting applies to pages filled from now on.
do $$
declare
    v_rel regclass;
begin
    for v_rel in
        select c.template_table::regclass from partman.part_config as c
        where c.parent_table = 'jobctl.job' and c.template_table is not null
        union all
        select i.inhrelid::regclass from pg_catalog.pg_inherits as i where i.inhparent = 'jobctl.job'::regclass
    loop
        execute format('alter table %s set (fillfactor = 50)', v_rel);
    end loop;
end
$$;
