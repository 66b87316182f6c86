-- jobctl.maintain_partitions: partitions ahead, retention and the archive, with every lock request
-- bounded by a 50 ms lock_timeout, so that a session holding a lock on a partition makes this run
-- give up (and retry) instead of making every claim queue behind its lock request.
-- A transaction keeps its locks until it ends, and claims lock every hot partition (their plans
-- are generic), so a call does at most one step that locks hot tables, the first with work of:
-- seal each job / _event partition whose day is over with a CHECK constraint on its bounds (added
-- NOT VALID, validated by a later call without blocking writes), so that attaching it to the
-- archive needs no scan; then pg_partman's maintenance (jobctl._retire_partitions: partitions
-- ahead, and those past the hot retention moved to the archive). Before that step it drops archive
-- partitions past the archive retention and deletes the archive default partitions' rows past it,
-- which lock only archive tables, and deletes the steps and events past the hot retention
-- (jobctl._expire_durable); with an object archive (jobctl.retention.archive_url, migration
-- 0030) it drops nothing: `jobctl archive run` exports those days and drops them itself. A step
-- that cannot get its locks is retried twice after 0.1 and 0.2 s (a failed try releases what it
-- locked), then left to the next call; any other error is logged as a warning and the step left
-- too. Returns 1 when every step it tried ran, else 0.
create or replace function jobctl.maintain_partitions()
returns integer
language plpgsql
set lock_timeout = '50ms'
as $$
declare
    v_policy jobctl.retention;
    v_partman text;
    v_step text;
    v_try integer;
    v_done boolean := true;
begin
    if pg_is_in_recovery() or not jobctl._try_lock('maintain') then
        return 0;
    end if;
    select * into v_policy from jobctl.retention;
    select e.extnamespace::regnamespace::text into v_partman
    from pg_catalog.pg_extension as e where e.extname = 'pg_partman';

    for v_step in
        select s.sql from (
            select 1 as ord, p.lower_bound as at, format('drop table %s', p.part) as sql
            from jobctl._partitions(array['jobctl.job_archive', 'jobctl._event_archive']::regclass[]) as p
            where p.upper_bound < now() - v_policy.archive and v_policy.archive_url is null
            union all
            select 2, null, format('delete from %s where %I < %L', d.part, d.key_column, now() - v_policy.archive)
            from (values ('jobctl.job_archive_default', 'created_at'), ('jobctl._event_archive_default', 'job_created_at'))
                as d (part, key_column)
            where v_policy.archive_url is null
            union all
            select 2, null, format('select jobctl._expire_durable(%L)', v_policy.hot)
            union all
            (
                -- the one step on hot tables
                select 3, h.at, h.sql from (
                    select p.lower_bound as at, case when p.sealed is null
                        then format('alter table %s add constraint %I check (%I >= %L and %I < %L) not valid',
                            p.part, p.seal_name, p.key_column, p.lower_bound, p.key_column, p.upper_bound)
                        else format('alter table %s validate constraint %I', p.part, p.seal_name) end as sql
                    from jobctl._partitions(array['jobctl.job', 'jobctl._event']::regclass[]) as p
                    where p.upper_bound <= now() and p.sealed is distinct from true
                    union all
                    select 'infinity', format('select jobctl._retire_partitions(%L, %L)', v_partman, v_policy.hot)
                ) as h
                order by h.at
                limit 1
            )
        ) as s
        order by s.ord, s.at
    loop
        for v_try in 1 .. 3 loop
            begin
                execute v_step;
                exit;
            exception
                when lock_not_available then
                    null;
                when others then
                    -- pg_partman re-raises a lock timeout as a plain exception (P0001)
                    if sqlerrm not like '%lock timeout%' then
                        raise warning 'jobctl.maintain_partitions: % failed: % (%)', v_step, sqlerrm, sqlstate;
                        v_done := false;
                        exit;
                    end if;
            end;
            if v_try = 3 then
                v_done := false;
            else
                perform pg_sleep(0.1 * v_try);
            end if;
        end loop;
    end loop;
    return case when v_done then 1 else 0 end;
end
$$;

comment on function jobctl.maintain_partitions() is
'Partition maintenance, one step on hot tables a call, each lock request under a 50 ms
lock_timeout: a day that is over sealed with a CHECK on its bounds; job and event partitions made ahead
(pg_partman); partitions past the hot retention (jobctl.retention.hot, 7 days) moved to jobctl.job_archive /
jobctl._event_archive with their unfinished jobs carried over; archive partitions past jobctl.retention.archive
(90 days) dropped, or, with jobctl.retention.archive_url set, left for `jobctl archive run` to export to
object storage and drop. A step that cannot get its locks is retried twice, then left to the next call. Returns 1 when
every step it tried ran, else 0 (standby, another call in progress, a lock not granted in time, or an error logged
as a warning).
Errors: none.
Example:
select jobctl.maintain_partitions();';
