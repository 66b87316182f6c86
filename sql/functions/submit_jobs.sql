-- jobctl.submit_jobs: submit a JSON array of jobs, all or nothing; rows in input order.
-- Each element has submit_job's keys: run_at ISO 8601, timeout an interval string or seconds.
create or replace function jobctl.submit_jobs(jobs jsonb)
returns table (job_id bigint, duplicate boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_bad record;
    v_specs jobctl._job_spec[];
    v_key text;
    v_keys constant text[] := array[
        'tenant_id', 'queue', 'payload', 'priority', 'run_at', 'dedup_key', 'max_attempts', 'backoff', 'timeout',
        'subject_key', 'concurrency_key', 'traceparent'
    ];
begin
    if jobs is null or jsonb_typeof(jobs) <> 'array' then
        raise exception using errcode = 'JC001', message = 'jobs must be a JSON array of job objects';
    end if;
    if jsonb_array_length(jobs) > 10000 then
        raise exception using errcode = 'JC001',
            message = format('jobs holds %s jobs; at most 10000 may be submitted at once', jsonb_array_length(jobs)),
            detail = 'field: jobs',
            hint = 'Nothing was submitted; submit them in batches of at most 10000.';
    end if;
    -- removing the known keys leaves {} unless there is another (one operator a job, no subquery);
    -- the text keys are strings or null (->> would turn {"a": 1} into the text {"a": 1})
    select a.i, jsonb_typeof(a.e) as kind, a.e into v_bad
    from jsonb_array_elements(jobs) with ordinality as a (e, i)
    where case when jsonb_typeof(a.e) = 'object' then a.e - v_keys <> '{}'::jsonb
            or jsonb_typeof(a.e -> 'tenant_id') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'queue') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'dedup_key') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'subject_key') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'concurrency_key') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'traceparent') not in ('string', 'null')
        else true end
    order by a.i
    limit 1;
    if found then
        v_key := case when v_bad.kind = 'object' then
            (select k.key from jsonb_object_keys(v_bad.e - v_keys) as k (key) limit 1) end;
        if v_bad.kind = 'object' and v_key is null then
            v_key := (select k.key from unnest(array['tenant_id', 'queue', 'dedup_key', 'subject_key', 'concurrency_key', 'traceparent']) as k (key)
                      where jsonb_typeof(v_bad.e -> k.key) not in ('string', 'null') limit 1);
            raise exception using errcode = 'JC001',
                message = format('jobs[%s].%s must be a string', v_bad.i - 1, v_key),
                detail = format('field: jobs[%s].%s', v_bad.i - 1, v_key),
                hint = 'Nothing was submitted.';
        end if;
        raise exception using errcode = 'JC001',
            message = case when v_bad.kind <> 'object' then format('jobs[%s] must be an object', v_bad.i - 1)
                else format('jobs[%s] has an unknown key: %s', v_bad.i - 1, v_key) end,
            hint = 'Nothing was submitted.';
    end if;

    select array_agg(row(
        a.e ->> 'tenant_id',
        a.e ->> 'queue',
        a.e -> 'payload',
        -- helpers only for keys that are there: 1,000 elements cost 2,000 plpgsql calls otherwise
        coalesce(
            case when a.e ? 'priority' then jobctl._to_int(a.e -> 'priority', format('jobs[%s].priority', a.i - 1)) end, 0
        ),
        case when a.e ? 'run_at' then jobctl._to_timestamptz(a.e -> 'run_at', format('jobs[%s].run_at', a.i - 1)) end,
        a.e ->> 'dedup_key',
        case when a.e ? 'max_attempts'
            then jobctl._to_int(a.e -> 'max_attempts', format('jobs[%s].max_attempts', a.i - 1)) end,
        case when a.e ? 'backoff' and a.e -> 'backoff' <> 'null'
            then jobctl._normalize_backoff(a.e -> 'backoff', format('jobs[%s].backoff', a.i - 1)) end,
        case when a.e ? 'timeout' and a.e -> 'timeout' <> 'null'
            then jobctl._to_interval(a.e -> 'timeout', format('jobs[%s].timeout', a.i - 1)) end,
        a.e ->> 'subject_key',
        a.e ->> 'concurrency_key',
        a.e ->> 'traceparent'
    )::jobctl._job_spec order by a.i)
    into v_specs
    from jsonb_array_elements(jobs) with ordinality as a (e, i);

    return query select s.job_id, s.duplicate from jobctl._submit(v_specs, true) as s;
end
$$;

comment on function jobctl.submit_jobs(jsonb) is
'Submit a JSON array of jobs (objects with submit_job''s keys; run_at ISO 8601, timeout an
interval string or seconds), at most 10,000 a call, all or nothing; returns (job_id, duplicate) in input order.
Errors: JC001 a bad field (named with its element, as jobs[3].priority), not an array, or over 10,000 jobs,
JC002 a payload over 64 KiB, JC003 a bad backoff, JC004 over max_pending, JC005 over the submit rate, JC006 a
dedup_key under REPEATABLE READ, JC008 the tenant encrypts and the session lacks its key, 42501 another tenant.
Example:
select * from jobctl.submit_jobs(''[{"tenant_id": "acme", "queue": "email", "payload": {"to": "a@example.com"}},
    {"tenant_id": "acme", "queue": "email", "payload": {}, "run_at": "2030-01-01T00:00:00Z", "timeout": 60}]'');';
