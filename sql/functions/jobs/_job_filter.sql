-- jobctl._job_filter: a bulk action's job filter (count_jobs, retry_jobs, cancel_jobs), checked and
-- made canonical: JSON null means the key is absent, state is always an array, times are ISO text.
-- Refuses with JC001 naming the field (filter.<key>): a filter that is not an object, an unknown
-- key, a wrong type, a value out of its bound, or an empty time range. Reads nothing.
create or replace function jobctl._job_filter(p_filter jsonb)
returns jsonb
language plpgsql
stable  -- the timestamptz casts read the session's TimeZone
as $$
declare
    v_key text;
    v_value jsonb;
    v_out jsonb := '{}';
    v_states text[];
    v_ids bigint[];
    v_lo timestamptz;
    v_hi timestamptz;
    v_max integer;
begin
    if p_filter is null or jsonb_typeof(p_filter) <> 'object' then
        raise exception using errcode = 'JC001',
            message = format('filter must be a JSON object, not %s', coalesce(jsonb_typeof(p_filter), 'NULL')),
            detail = 'field: filter',
            hint = 'For example {"tenant_id": "acme", "state": "dead"}; {} matches every job you may act on.';
    end if;
    for v_key, v_value in select e.key, e.value from jsonb_each(p_filter) as e loop
        continue when v_value = 'null'::jsonb;
        case v_key
            when 'tenant_id', 'queue', 'concurrency_key', 'dedup_key', 'subject_key', 'error_contains' then
                v_max := case when v_key in ('dedup_key', 'subject_key') then 500 else 200 end;
                if jsonb_typeof(v_value) <> 'string' or v_value #>> '{}' = '' or length(v_value #>> '{}') > v_max then
                    raise exception using errcode = 'JC001',
                        message = format('filter.%s must be a string of 1 to %s characters', v_key, v_max),
                        detail = format('field: filter.%s', v_key);
                end if;
                v_out := v_out || jsonb_build_object(v_key, v_value);
            when 'state' then
                if jsonb_typeof(v_value) = 'string' then
                    v_value := jsonb_build_array(v_value);
                end if;
                if jsonb_typeof(v_value) <> 'array' or jsonb_array_length(v_value) = 0
                   or exists (select from jsonb_array_elements(v_value) as s where jsonb_typeof(s) <> 'string') then
                    raise exception using errcode = 'JC001',
                        message = 'filter.state must be a state or a non-empty array of states',
                        detail = 'field: filter.state';
                end if;
                select array_agg(distinct s) into v_states from jsonb_array_elements_text(v_value) as s;
                if not v_states <@ array['pending', 'running', 'completed', 'failed', 'dead', 'cancelled', 'waiting'] then
                    raise exception using errcode = 'JC001',
                        message = format('filter.state must be one of pending, running, completed, failed, dead, cancelled, waiting, not %s',
                            (select string_agg(s, ', ') from unnest(v_states) as s
                             where s <> all(array['pending', 'running', 'completed', 'failed', 'dead', 'cancelled', 'waiting']))),
                        detail = 'field: filter.state';
                end if;
                v_out := v_out || jsonb_build_object('state', to_jsonb(v_states));
            when 'job_ids' then
                if jsonb_typeof(v_value) <> 'array' or jsonb_array_length(v_value) not between 1 and 1000
                   or exists (
                       select from jsonb_array_elements(v_value) as i
                       where case when jsonb_typeof(i) = 'number' and i #>> '{}' ~ '^[1-9][0-9]{0,18}$'
                           then (i #>> '{}')::numeric > 9223372036854775807 else true end
                   ) then
                    raise exception using errcode = 'JC001',
                        message = 'filter.job_ids must be an array of 1 to 1000 positive integer job ids',
                        detail = 'field: filter.job_ids';
                end if;
                select array_agg(distinct (i #>> '{}')::bigint order by (i #>> '{}')::bigint) into v_ids
                from jsonb_array_elements(v_value) as i;
                v_out := v_out || jsonb_build_object('job_ids', to_jsonb(v_ids));
            when 'parked' then  -- a durable job that gave up its lease (docs/durable.md)
                if v_value not in ('"sleep"', '"event"', '"job"') then
                    raise exception using errcode = 'JC001', message = 'filter.parked must be sleep, event or job',
                        detail = 'field: filter.parked';
                end if;
                v_out := v_out || jsonb_build_object('parked', v_value);
            when 'created_after', 'created_before', 'finished_after', 'finished_before' then
                v_out := v_out || jsonb_build_object(v_key, jobctl._to_timestamptz(v_value, 'filter.' || v_key));
            else
                raise exception using errcode = 'JC001',
                    message = format('filter has an unknown key %s', v_key),
                    detail = format('field: filter.%s', v_key),
                    hint = 'Keys: tenant_id, queue, state, job_ids, dedup_key, subject_key, concurrency_key, created_after, '
                        || 'created_before, finished_after, finished_before, error_contains, parked.';
        end case;
    end loop;
    foreach v_key in array array['created', 'finished'] loop
        v_lo := (v_out ->> (v_key || '_after'))::timestamptz;
        v_hi := (v_out ->> (v_key || '_before'))::timestamptz;
        if v_lo >= v_hi then
            raise exception using errcode = 'JC001',
                message = format('filter.%s_before must be later than filter.%s_after', v_key, v_key),
                detail = format('field: filter.%s_before', v_key);
        end if;
    end loop;
    return v_out;
end
$$;
