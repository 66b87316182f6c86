-- jobctl._archive_commit: the database's side of one unit of the export (jobctl._archive_units), once
-- its files are written, read back and checked (p_files: [{tenant_id, day, url, rows, bytes,
-- min_job_id, max_job_id, sha256}], one per jobctl._archive_tenants group), all in the caller's one
-- transaction:
-- 1. the exporter's lease renewed for p_lease_seconds (jobctl._archive_lease): its row lock holds
--    every other run off until the commit; held = false when another run took it over (nothing done);
-- 2. a day's partition: ACCESS EXCLUSIVE on the archive's parents (the partition's DROP takes it on
--    the parent anyway), asked for last, each try under a 50 ms lock_timeout, three tries 0.1 and
--    0.2 s apart (jobctl.maintain_partitions' rule: readers queue behind it for at most that long,
--    and no writer, forget_subject or delete_jobs, waits for the exporter while holding a lock the
--    exporter needs);
-- 3. the check that the unit holds exactly the jobs written: a day's partition its count and the sum
--    of its ids (p_id_sum) against the files'; the late unit's jobs (p_job_ids, created before
--    p_before) are deleted with their events, and all of them must have been there;
-- 4. the files recorded in archive_manifest and their archive_writing rows deleted;
-- 5. a day's partition and its events' partition dropped, the events of jobs not in it (carried over
--    past their day, archived later) kept aside and put back into the events' default partition.
-- A unit that changed since its files were written (a late job routed into the day, a delete) or
-- whose lock was not granted changes nothing: `changed` says why, and the next run exports it again.
-- Refuses a part that is not the archive's (JC001). As the schema owner (granted to no role).
-- Locks: the lease row; jobctl.job_archive and jobctl._event_archive (a day). Writes: _archive_lease,
-- archive_manifest, archive_writing (delete), job_archive and _event_archive (drop of a day's
-- partitions; delete of late jobs and their events).
create or replace function jobctl._archive_commit(
    p_holder uuid, p_lease_seconds integer, p_part regclass, p_before timestamptz, p_files jsonb,
    p_id_sum numeric, p_job_ids bigint[]
)
returns table (held boolean, changed text)
language plpgsql
as $$
declare
    v_part regclass := jobctl._archive_part(p_part);
    v_events regclass;
    v_kept jobctl._event_archive[];
    v_rows bigint;
    v_sum numeric;
    v_written bigint;
    v_try integer;
    v_lock_timeout text := current_setting('lock_timeout');
begin
    if not jobctl._archive_lease(p_holder, p_lease_seconds) then
        return query select false, 'another `jobctl archive run` took over the archive''s lease';
        return;
    end if;
    select coalesce(sum((f ->> 'rows')::bigint), 0) into v_written from jsonb_array_elements(p_files) as f;
    if v_part = 'jobctl.job_archive_default'::regclass then
        begin
            with gone as (
                delete from jobctl.job_archive_default as j
                where j.job_id = any(p_job_ids) and j.created_at < p_before
                returning j.job_id
            ),
            events as (
                delete from jobctl._event_archive as e where e.job_id in (select g.job_id from gone as g)
            )
            select count(*) into v_rows from gone;
            if v_rows <> v_written or v_rows <> coalesce(cardinality(p_job_ids), 0) then
                -- rolls the deletes back (the block's subtransaction); never leaves this function
                raise exception using errcode = 'JC099',
                    message = format('%s: %s jobs written, %s deleted', v_part, v_written, v_rows);
            end if;
        exception
            when sqlstate 'JC099' then
                return query select true, sqlerrm;
                return;
        end;
    else
        -- the 50 ms for this lock only: the lease's renewal above waits as long as it must
        perform set_config('lock_timeout', '50ms', true);
        for v_try in 1 .. 3 loop
            begin
                lock table jobctl.job_archive, jobctl._event_archive in access exclusive mode;
                exit;
            exception
                when lock_not_available then
                    if v_try = 3 then
                        perform set_config('lock_timeout', v_lock_timeout, true);
                        return query select true, 'the archive''s tables are in use: the lock was not granted';
                        return;
                    end if;
            end;
            perform pg_sleep(0.1 * v_try);
        end loop;
        perform set_config('lock_timeout', v_lock_timeout, true);
        execute format('select count(*), coalesce(sum(j.job_id), 0) from %s as j', v_part) into v_rows, v_sum;
        if v_rows <> v_written or v_sum <> p_id_sum then
            return query select true, format('%s: %s jobs written, %s there now', v_part, v_written, v_rows);
            return;
        end if;
    end if;
    insert into jobctl.archive_manifest as m
        (tenant_id, job_day, url, job_count, bytes, min_job_id, max_job_id, sha256)
    select f.tenant_id, f.day, f.url, f.rows, f.bytes, f.min_job_id, f.max_job_id, f.sha256
    from jsonb_to_recordset(p_files) as f (
        tenant_id text, day date, url text, rows bigint, bytes bigint, min_job_id bigint, max_job_id bigint,
        sha256 text
    )
    on conflict (url) do update set job_count = excluded.job_count, bytes = excluded.bytes,
        min_job_id = excluded.min_job_id, max_job_id = excluded.max_job_id, sha256 = excluded.sha256,
        written_at = now();
    delete from jobctl.archive_writing as w
    where w.url in (select f ->> 'url' from jsonb_array_elements(p_files) as f);
    if v_part <> 'jobctl.job_archive_default'::regclass then
        select e.part into v_events
        from jobctl._partitions(array['jobctl.job_archive']::regclass[]) as j
        inner join jobctl._partitions(array['jobctl._event_archive']::regclass[]) as e
            on e.lower_bound = j.lower_bound
        where j.part = v_part;
        if v_events is not null then
            execute format(
                'select array_agg(row(%s)::jobctl._event_archive) from %s as e
                where not exists (select from %s as j where j.job_id = e.job_id)',
                (
                    select string_agg(format('e.%I', a.attname), ', ' order by a.attnum)
                    from pg_catalog.pg_attribute as a
                    where a.attrelid = 'jobctl._event_archive'::regclass and a.attnum > 0 and not a.attisdropped
                ),
                v_events, v_part
            ) into v_kept;
            execute format('drop table %s', v_events);
        end if;
        execute format('drop table %s', v_part);
        insert into jobctl._event_archive select (unnest(v_kept)).*;
    end if;
    return query select true, null::text;
end
$$;
