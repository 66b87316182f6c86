-- jobctl._filter_jobs: the ids of the jobs that match a filter checked by jobctl._job_filter,
-- belong to p_tenants (NULL: every tenant) and are in one of p_states (NULL: any), with job_id
-- above p_after, in job_id order, at most p_limit of them; with p_newest_first, below p_after and
-- newest first (a listing's keyset page). The statement names only the filter's keys, so each call
-- is planned for them (an index on tenant_id, subject_key or dedup_key when the filter has one; the
-- job_id order otherwise, which the limit stops early). Archived jobs only with p_archived (a
-- listing): the bulk actions leave them out, since they are finished and read-only.
-- Reads: job (and job_archive).
create or replace function jobctl._filter_jobs(
    p_filter jsonb, p_tenants text[], p_states text[], p_after bigint, p_limit integer,
    p_newest_first boolean default false, p_archived boolean default false
)
returns setof bigint
language plpgsql
stable
as $$
declare
    v_where text := '';
    v_states text[] := p_states;
begin
    if p_filter ? 'state' then
        v_states := array(
            select s from jsonb_array_elements_text(p_filter -> 'state') as s
            where p_states is null or s = any(p_states)
        );
    end if;
    -- $1 the filter, $2 the tenants, $3 the states, $4 after_id, $5 the limit
    if p_tenants is not null then
        v_where := v_where || ' and j.tenant_id = any($2)';
    end if;
    if v_states is not null then
        v_where := v_where || ' and j.state = any($3)';
    end if;
    if p_after is not null then
        v_where := v_where || case when p_newest_first then ' and j.job_id < $4' else ' and j.job_id > $4' end;
    end if;
    v_where := v_where || concat(
        case when p_filter ? 'tenant_id' then ' and j.tenant_id = $1 ->> ''tenant_id''' end,
        case when p_filter ? 'queue' then ' and j.queue = $1 ->> ''queue''' end,
        case when p_filter ? 'job_ids' then
            ' and j.job_id = any(array(select i::bigint from jsonb_array_elements_text($1 -> ''job_ids'') as i))' end,
        case when p_filter ? 'dedup_key' then ' and j.dedup_key = $1 ->> ''dedup_key''' end,
        case when p_filter ? 'subject_key' then ' and j.subject_key = $1 ->> ''subject_key''' end,
        case when p_filter ? 'concurrency_key' then ' and j.concurrency_key = $1 ->> ''concurrency_key''' end,
        case when p_filter ? 'created_after' then ' and j.created_at > ($1 ->> ''created_after'')::timestamptz' end,
        case when p_filter ? 'created_before' then ' and j.created_at < ($1 ->> ''created_before'')::timestamptz' end,
        case when p_filter ? 'finished_after' then ' and j.finished_at > ($1 ->> ''finished_after'')::timestamptz' end,
        case when p_filter ? 'finished_before' then ' and j.finished_at < ($1 ->> ''finished_before'')::timestamptz' end,
        case when p_filter ? 'error_contains' then
            ' and strpos(lower(j.last_error), lower($1 ->> ''error_contains'')) > 0' end,
        -- parked jobs by their tokens: a _delayed row so marked (its partial index), or a spawned
        -- child's edge to its parent
        case
            when p_filter ->> 'parked' = 'job' then
                ' and j.state = ''waiting'' and j.job_id in (select s.parent_id from jobctl._spawn as s'
                || ' inner join jobctl._edge as e on e.parent_id = s.child_id and e.child_id = s.parent_id)'
            when p_filter ? 'parked' then
                ' and j.state = ''pending'' and j.job_id in (select d.job_id from jobctl._delayed as d'
                || ' where d.parked = $1 ->> ''parked'')'
        end
    );
    return query execute
        'select j.job_id from '
        || case when p_archived then '(select * from jobctl.job union all select * from jobctl.job_archive)' else 'jobctl.job' end
        || ' as j where true' || v_where
        || ' order by j.job_id' || case when p_newest_first then ' desc' else '' end || ' limit $5'
    using p_filter, p_tenants, v_states, p_after, p_limit;
end
$$;
