-- jobctl._points_back: whether every element of after (a spec's parents in its call, by 1-based
-- place) is a place before p_ord (so no workflow's edges can make a cycle).
create or replace function jobctl._points_back(p_after integer[], p_ord bigint)
returns boolean
language plpgsql
immutable
as $$
begin
    return not exists (select from unnest(p_after) as a (k) where a.k is null or a.k < 1 or a.k >= p_ord);
end
$$;

-- jobctl._spec_fault: the first rule a job spec breaks, as a number (NULL: none), for
-- jobctl._submit_check, which names the field and raises, and for submit_job's plain path, which
-- leaves a faulty spec to _submit. p_ord: the spec's 1-based position in its call; p_extra: the call
-- has a workflow's or a scoped key's options (their rules are looked at only then); p_linked: a job
-- of the call depends on an earlier one. A SQL function that the planner inlines (so no subquery: that would stop it):
-- one CASE per job, no per-job call.
create or replace function jobctl._spec_fault(
    s jobctl._job_spec, p_ord bigint, p_now timestamptz, p_extra boolean, p_linked boolean
)
returns integer
language sql
stable
as $$
    select case
        when s.tenant_id is null or s.tenant_id = '' then 1
        when length(s.tenant_id) > 200 then 2
        when s.queue is null or s.queue = '' then 3
        when length(s.queue) > 200 then 4
        when s.payload is null or s.payload = 'null'::jsonb then 5
        when octet_length(s.payload::text) > 65536 then 6
        when s.priority is null or s.priority not between -100 and 100 then 7
        when s.max_attempts not between 1 and 1000 then 8
        when s.timeout <= interval '0' or s.timeout > interval '30 days' then 9
        when s.dedup_key = '' or length(s.dedup_key) > 500 then 10
        when not s.run_at between timestamptz '1970-01-01 00:00:00+00' and p_now + interval '10 years' then 11
        when s.subject_key = '' or length(s.subject_key) > 500 then 12
        when s.payload ? '$jobctl_sealed' then 13
        when s.concurrency_key = '' or length(s.concurrency_key) > 200 then 14
        when jobctl._too_deep(s.payload) then 15
        -- names an operator reads in a terminal or a page: no control or bidirectional-override
        -- characters (docs/security.md, Bounds); one match a job, the field found by _submit_check
        when concat(s.tenant_id, s.queue, s.dedup_key, s.subject_key, s.concurrency_key) ~ jobctl._unprintable()
            then 16
        when s.traceparent !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' then 17
        -- a workflow's and a scoped key's options: looked at only in a call that has them
        when p_extra and (cardinality(s.depends_on) > 10000 or array_position(s.depends_on, null) is not null) then 18
        -- a workflow's edges point at earlier jobs of the call: no cycle can be written
        when p_extra and s.after is not null and jobctl._points_back(s.after, p_ord) is not true then 19
        when p_linked and s.dedup_key is not null then 20
        when p_extra and (s.dedup_states is not null or s.dedup_period is not null or s.dedup_mode is not null)
            and s.dedup_key is null then 21
        when p_extra and (cardinality(s.dedup_states) = 0 or not s.dedup_states <@ array[
            'waiting', 'pending', 'running', 'failed', 'completed', 'dead', 'cancelled'
        ] or array_position(s.dedup_states, null) is not null) then 22
        when p_extra and (s.dedup_period < interval '1 second' or s.dedup_period > interval '366 days') then 23
        when p_extra and s.dedup_mode not in ('keep', 'replace', 'preserve_run_at') then 24
    end
$$;
