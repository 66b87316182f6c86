-- jobctl.forget_subject: erase every job of a data subject (a person) of a tenant, hot and archive:
-- active jobs are cancelled first (their queue rows and counters go as with cancel_job), then every
-- job row and its events and steps are deleted. A worker still running one is fenced (its lease is gone).
-- The audit record keeps the counts, nothing of the subject key. Submits of the
-- subject committed after this call began are not seen: stop them first. Files of the object
-- archive are rewritten without the subject by the next `jobctl archive run` (an archive_erasure
-- row). A job still waiting on an erased one is cancelled (jobctl._parents_erased). Writes: job,
-- job_archive, _event, _event_archive, _step, _ready, _delayed, _running (through cancel_job),
-- archive_erasure, audit_log; _edge, _waiting and job through _parents_erased.
create or replace function jobctl.forget_subject(tenant_id text, subject_key text)
returns table (cancelled integer, deleted integer)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_id bigint;
    v_cancelled integer := 0;
    v_deleted integer;
    v_gone bigint[];
begin
    if tenant_id is null or tenant_id = '' or length(tenant_id) > 200 then
        raise exception using errcode = 'JC001', message = 'tenant_id must be a string of 1 to 200 characters',
            detail = 'field: tenant_id';
    end if;
    if subject_key is null or subject_key = '' or length(subject_key) > 500 then
        raise exception using errcode = 'JC001', message = 'subject_key must be a string of 1 to 500 characters',
            detail = 'field: subject_key';
    end if;
    perform jobctl._require_tenant(tenant_id, 'jobs:cancel');

    for v_id in
        select j.job_id from jobctl.job as j
        where j.tenant_id = forget_subject.tenant_id and j.subject_key = forget_subject.subject_key
            and j.state in ('pending', 'failed', 'running', 'waiting')
        order by j.job_id
    loop
        begin
            perform jobctl.cancel_job(v_id);
            v_cancelled := v_cancelled + 1;
        exception when sqlstate 'JC010' then
            null;  -- it finished meanwhile: the delete below takes it all the same
        end;
    end loop;

    with hot as (
        delete from jobctl.job as j
        where j.tenant_id = forget_subject.tenant_id and j.subject_key = forget_subject.subject_key
        returning j.job_id, j.tenant_id, j.queue, j.state
    ),
    tally as (
        -- (the active ones were cancelled above: every deleted hot job is finished)
        insert into jobctl._stat_delta (tenant_id, queue, dead, completed, cancelled)
        select h.tenant_id, h.queue, -count(*) filter (where h.state = 'dead'),
            -count(*) filter (where h.state = 'completed'), -count(*) filter (where h.state = 'cancelled')
        from hot as h
        group by h.tenant_id, h.queue
    ),
    archived as (
        delete from jobctl.job_archive as j
        where j.tenant_id = forget_subject.tenant_id and j.subject_key = forget_subject.subject_key
        returning j.job_id
    ),
    ids as (
        select h.job_id from hot as h union all select a.job_id from archived as a
    ),
    hot_events as (
        delete from jobctl._event as e where e.job_id in (select i.job_id from ids as i)
    ),
    archived_events as (
        delete from jobctl._event_archive as e where e.job_id in (select i.job_id from ids as i)
    ),
    steps as (
        delete from jobctl._step as s where s.job_id in (select i.job_id from ids as i)
    )
    select count(*), array_agg(i.job_id) into v_deleted, v_gone from ids as i;
    -- children of other subjects still waiting on an erased job (under `wait`): it can no longer be
    -- retried, so they are cancelled (docs/workflows.md)
    perform jobctl._parents_erased(v_gone);

    -- the object archive's files: their rows go at the next `jobctl archive run`,
    -- and get_job's fallback hides them until then
    if exists (select from jobctl.retention as r where r.archive_url is not null)
        or exists (select from jobctl.archive_manifest as m where m.tenant_id = forget_subject.tenant_id) then
        insert into jobctl.archive_erasure (tenant_id, subject_key) values (tenant_id, subject_key);
    end if;

    -- counts only: a hash of a guessable key (user-42) would name the person it is meant to forget
    perform jobctl._audit('forget_subject', tenant_id, jsonb_build_object('cancelled', v_cancelled, 'deleted', v_deleted));
    return query select v_cancelled, v_deleted;
end
$$;

comment on function jobctl.forget_subject(text, text) is
'Erase every job submitted with this subject_key for tenant_id, in hot and archive storage:
active ones are cancelled (a worker running one is fenced), then all are deleted with their history; a job still
waiting on one of them (on_parent_failure wait) is cancelled, since it can no longer be retried. Returns how
many were cancelled and deleted (in the database); audited (the counts only). With an object archive, the
subject''s rows leave its files at the next `jobctl archive run`, hidden from get_job until then. Only for the
caller''s tenants.
Errors: JC001 a bad tenant_id or subject_key, 42501 another tenant.
Example:
select * from jobctl.forget_subject(''acme'', ''user-1234'');';
