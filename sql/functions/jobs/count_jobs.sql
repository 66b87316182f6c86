-- jobctl.count_jobs: how many hot jobs of the caller's tenants match a bulk filter (what a bulk
-- action's confirmation states first), counted up to max_count: the scan stops at max_count + 1
-- matches and the answer is then "at least max_count" (capped). A broad filter thus reads about
-- that many rows; a narrow one without an index of its own (error_contains, a time range) reads
-- the caller's jobs until it has found them, at worst all of them. action narrows to the states
-- retry_jobs, cancel_jobs or delete_jobs would act on.
-- Reads: job (jobctl._filter_jobs).
create or replace function jobctl.count_jobs(filter jsonb, action text default null, max_count integer default 10000)
returns table (jobs bigint, capped boolean)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_variable
declare
    v_filter jsonb := jobctl._job_filter(filter);
    v_states text[];
    v_n bigint;
begin
    if action is not null and action not in ('retry', 'cancel', 'delete') then
        raise exception using errcode = 'JC001', message = format('action must be retry, cancel, delete or NULL, not %s', action),
            detail = 'field: action';
    end if;
    if max_count is null or max_count not between 1 and 100000 then
        raise exception using errcode = 'JC001',
            message = format('max_count must be between 1 and 100000, not %s', coalesce(max_count::text, 'NULL')),
            detail = 'field: max_count';
    end if;
    if v_filter ? 'tenant_id' then
        perform jobctl._require_tenant(v_filter ->> 'tenant_id', 'jobs:read', 'filter.tenant_id');
    end if;
    v_states := jobctl._action_states(action);
    select count(*) into v_n
    from jobctl._filter_jobs(v_filter, jobctl._acting_tenants('jobs:read'), v_states, null, max_count + 1);
    return query select least(v_n, max_count), v_n > max_count;
end
$$;

comment on function jobctl.count_jobs(jsonb, text, integer) is
'How many hot jobs of the caller''s tenants match a bulk filter, counted up to max_count (1..100000,
default 10000); capped true means at least that many. action retry, cancel or delete counts only the jobs in a state
retry_jobs, cancel_jobs or delete_jobs acts on. The filter is a JSON object with any of tenant_id, queue, state (one or an array),
job_ids (1 to 1000), dedup_key, subject_key, concurrency_key, created_after, created_before, finished_after,
finished_before (ISO 8601, exclusive) and error_contains (a case-insensitive substring of last_error); {} matches
every job the caller may act on. Archived jobs are not counted: no bulk action can change them.
Errors: JC001 a filter that is not an object, an unknown key, a value of the wrong type or out of its bound (field
filter.<key>), a bad action or max_count, 42501 filter.tenant_id is another tenant.
Example:
select * from jobctl.count_jobs(''{"tenant_id": "acme", "state": "dead", "queue": "email"}'', action => ''retry'');';
