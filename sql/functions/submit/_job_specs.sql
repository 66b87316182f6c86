-- jobctl._job_specs: the specs of a JSON array of jobs (submit_jobs' elements, and with p_workflow
-- submit_workflow's: each with a name, its depends_on naming earlier elements or giving job ids),
-- each field checked and named with its element (jobs[3].priority) when it is bad. The rest of the
-- checks are jobctl._submit_check's. p_cancel_on_failure is the default of the elements' on_parent_failure.
create or replace function jobctl._job_specs(p_jobs jsonb, p_workflow boolean, p_cancel_on_failure boolean default null)
returns jobctl._job_spec[]
language plpgsql
as $$
#variable_conflict use_column
declare
    v_bad record;
    v_specs jobctl._job_spec[];
    v_key text;
    v_keys text[] := array[
        'tenant_id', 'queue', 'payload', 'priority', 'run_at', 'dedup_key', 'max_attempts', 'backoff', 'timeout',
        'subject_key', 'concurrency_key', 'traceparent', 'depends_on', 'on_parent_failure', 'dedup_states',
        'dedup_period', 'dedup_mode'
    ] || case when p_workflow then array['name'] else '{}' end;
    v_names jsonb := '{}';  -- a workflow's names: {name: 1-based ordinal}
begin
    if p_jobs is null or jsonb_typeof(p_jobs) <> 'array' then
        raise exception using errcode = 'JC001', message = 'jobs must be a JSON array of job objects';
    end if;
    if jsonb_array_length(p_jobs) > 10000 then
        raise exception using errcode = 'JC001',
            message = format('jobs holds %s jobs; at most 10000 may be submitted at once', jsonb_array_length(p_jobs)),
            detail = 'field: jobs',
            hint = 'Nothing was submitted; submit them in batches of at most 10000.';
    end if;
    -- removing the known keys leaves {} unless there is another (one operator a job, no subquery);
    -- the text keys are strings or null (->> would turn {"a": 1} into the text {"a": 1})
    select a.i, jsonb_typeof(a.e) as kind, a.e into v_bad
    from jsonb_array_elements(p_jobs) with ordinality as a (e, i)
    where case when jsonb_typeof(a.e) = 'object' then a.e - v_keys <> '{}'::jsonb
            or jsonb_typeof(a.e -> 'tenant_id') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'queue') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'dedup_key') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'subject_key') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'concurrency_key') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'traceparent') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'on_parent_failure') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'name') not in ('string', 'null')
            or jsonb_typeof(a.e -> 'dedup_mode') not in ('string', 'null')
        else true end
    order by a.i
    limit 1;
    if found then
        v_key := case when v_bad.kind = 'object' then
            (select k.key from jsonb_object_keys(v_bad.e - v_keys) as k (key) limit 1) end;
        if v_bad.kind = 'object' and v_key is null then
            v_key := (select k.key from unnest(array['tenant_id', 'queue', 'dedup_key', 'subject_key', 'concurrency_key', 'traceparent', 'on_parent_failure', 'name', 'dedup_mode']) as k (key)
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

    if p_workflow then
        -- names: 1 to 200 characters, unique; depends_on names earlier elements (or job ids)
        select x.i, x.why into v_bad
        from (
            select a.i,
                case when a.e ->> 'name' is null or a.e ->> 'name' = '' or length(a.e ->> 'name') > 200
                    or a.e ->> 'name' ~ jobctl._unprintable() then 'must be a string of 1 to 200 printable characters'
                    when row_number() over (partition by a.e ->> 'name' order by a.i) > 1
                    then 'is the name of an earlier job' end as why
            from jsonb_array_elements(p_jobs) with ordinality as a (e, i)
        ) as x
        where x.why is not null
        order by x.i
        limit 1;
        if found then
            raise exception using errcode = 'JC001',
                message = format('jobs[%s].name %s', v_bad.i - 1, v_bad.why),
                detail = format('field: jobs[%s].name', v_bad.i - 1),
                hint = 'Nothing was submitted. Each job of a workflow has a name of its own, which depends_on refers to.';
        end if;
        v_names := (select jsonb_object_agg(a.e ->> 'name', a.i) from jsonb_array_elements(p_jobs) with ordinality as a (e, i));
        select a.i, d.v into v_bad
        from jsonb_array_elements(p_jobs) with ordinality as a (e, i)
        cross join lateral jsonb_array_elements(
            case when jsonb_typeof(a.e -> 'depends_on') = 'array' then a.e -> 'depends_on' else '[]' end
        ) as d (v)
        where jsonb_typeof(d.v) = 'string' and coalesce((v_names ->> (d.v #>> '{}'))::bigint >= a.i, true)
        order by a.i
        limit 1;
        if found then
            raise exception using errcode = 'JC001',
                message = format('jobs[%s].depends_on names %s, which is not a job listed before it', v_bad.i - 1, v_bad.v),
                detail = format('field: jobs[%s].depends_on', v_bad.i - 1),
                hint = 'Nothing was submitted. List each job after the jobs it depends on.';
        end if;
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
        a.e ->> 'traceparent',
        case when a.e ? 'depends_on' and a.e -> 'depends_on' <> 'null' then jobctl._job_ids(
            case when p_workflow and jsonb_typeof(a.e -> 'depends_on') = 'array' then
                coalesce((select jsonb_agg(d.v) from jsonb_array_elements(a.e -> 'depends_on') as d (v)
                          where jsonb_typeof(d.v) <> 'string'), '[]')
            else a.e -> 'depends_on' end,
            format('jobs[%s].depends_on', a.i - 1)) end,
        case when p_workflow and jsonb_typeof(a.e -> 'depends_on') = 'array' then
            nullif(array(select (v_names ->> (d.v #>> '{}'))::integer from jsonb_array_elements(a.e -> 'depends_on') as d (v)
                         where jsonb_typeof(d.v) = 'string'), '{}') end,
        case when a.e ? 'on_parent_failure'
            then jobctl._parent_policy(a.e ->> 'on_parent_failure', format('jobs[%s].on_parent_failure', a.i - 1))
            else p_cancel_on_failure end,
        null,
        null,
        case when a.e ? 'dedup_states' and a.e -> 'dedup_states' <> 'null'
            then jobctl._to_text_array(a.e -> 'dedup_states', format('jobs[%s].dedup_states', a.i - 1)) end,
        case when a.e ? 'dedup_period' and a.e -> 'dedup_period' <> 'null'
            then jobctl._to_interval(a.e -> 'dedup_period', format('jobs[%s].dedup_period', a.i - 1)) end,
        a.e ->> 'dedup_mode'
    )::jobctl._job_spec order by a.i)
    into v_specs
    from jsonb_array_elements(p_jobs) with ordinality as a (e, i);

    return v_specs;
end
$$;
