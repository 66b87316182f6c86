-- jobctl.submit_batch: submit jobs as a batch, with callback jobs enqueued once when the last of
-- them ends. The callbacks wait (state waiting) with the batch's id; each member has an edge to
-- the first callback that ends with the member however it ends (jobctl._parents_ended, on_end), so
-- the member whose end leaves no edge ends the batch (jobctl._end_batches). Locks: those of
-- jobctl._submit. Writes: batch, _edge, and jobctl._submit's.
create or replace function jobctl.submit_batch(
    jobs jsonb,
    on_finish jsonb default null,
    on_success jsonb default null,
    on_discard jsonb default null
)
returns table (batch_id bigint, job_ids bigint[], on_finish_id bigint, on_success_id bigint, on_discard_id bigint)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_batch bigint := nextval('jobctl.batch_id_seq');
    v_members jobctl._job_spec[];
    v_callbacks jobctl._job_spec[];
    v_ids bigint[];
    v_cb bigint[];
    v_which text[];
    v_tenant text;
    v_bad record;
    v_i integer;
begin
    if jobs is null or jsonb_typeof(jobs) <> 'array' or jsonb_array_length(jobs) = 0 then
        raise exception using errcode = 'JC001', message = 'jobs must be a JSON array of 1 to 10000 job objects',
            detail = 'field: jobs', hint = 'Nothing was submitted.';
    end if;
    if coalesce(on_finish, on_success, on_discard) is null then
        raise exception using errcode = 'JC001', message = 'a batch needs a callback: on_finish, on_success or on_discard',
            detail = 'field: on_finish', hint = 'Nothing was submitted. Use submit_jobs for jobs without a callback.';
    end if;
    v_members := jobctl._job_specs(jobs, false);
    select o.ordinality as ord, o.tenant_id, o.dedup_key is not null as keyed into v_bad
    from unnest(v_members) with ordinality as o
    where o.dedup_key is not null or o.tenant_id is distinct from v_members[1].tenant_id
    order by o.ordinality
    limit 1;
    if found then
        raise exception using errcode = 'JC001',
            message = case when v_bad.keyed then format('jobs[%s].dedup_key: a batch''s jobs are new jobs; leave it out', v_bad.ord - 1)
                else format('jobs[%s].tenant_id: a batch''s jobs are one tenant''s', v_bad.ord - 1) end,
            detail = format('field: jobs[%s].%s', v_bad.ord - 1, case when v_bad.keyed then 'dedup_key' else 'tenant_id' end),
            hint = 'Nothing was submitted.';
    end if;
    v_tenant := v_members[1].tenant_id;
    -- each a member of the batch, without a dedup key's options
    for v_i in 1..cardinality(v_members) loop
        v_members[v_i].batch_id := v_batch;
        v_members[v_i].dedup_states := null;
        v_members[v_i].dedup_period := null;
        v_members[v_i].dedup_mode := null;
    end loop;
    -- the callbacks: submit_jobs' objects (tenant_id defaults to the members')
    select array_agg(c.which order by c.n),
        jobctl._job_specs(jsonb_agg(
            case when jsonb_typeof(c.spec) = 'object' and not c.spec ? 'tenant_id'
                then c.spec || jsonb_build_object('tenant_id', v_tenant) else c.spec end order by c.n), false)
    into v_which, v_callbacks
    from (values (1, 'on_finish', on_finish), (2, 'on_success', on_success), (3, 'on_discard', on_discard)) as c (n, which, spec)
    where c.spec is not null;
    if exists (select from unnest(v_callbacks) as c where c.tenant_id is distinct from v_tenant or c.dedup_key is not null) then
        raise exception using errcode = 'JC001',
            message = 'a batch''s callbacks are jobs of its members'' tenant, without a dedup_key',
            detail = 'field: on_finish', hint = 'Nothing was submitted.';
    end if;
    -- each waits for the batch's end (callback_of), without parents or a dedup key's options
    for v_i in 1..cardinality(v_callbacks) loop
        v_callbacks[v_i].depends_on := null;
        v_callbacks[v_i].after := null;
        v_callbacks[v_i].cancel_on_failure := false;
        v_callbacks[v_i].callback_of := v_batch;
        v_callbacks[v_i].dedup_states := null;
        v_callbacks[v_i].dedup_period := null;
        v_callbacks[v_i].dedup_mode := null;
    end loop;

    -- the batch row first: a member that ends in this transaction (a cancelled parent) ends the batch
    select array_agg(s.job_id order by s.ord) into v_cb
    from jobctl._submit(v_callbacks, true) with ordinality as s (job_id, duplicate, ord);
    insert into jobctl.batch (batch_id, tenant_id, size, on_finish, on_success, on_discard)
    values (v_batch, v_tenant, jsonb_array_length(jobs),
        v_cb[array_position(v_which, 'on_finish')], v_cb[array_position(v_which, 'on_success')],
        v_cb[array_position(v_which, 'on_discard')]);
    select array_agg(s.job_id order by s.ord) into v_ids
    from jobctl._submit(v_members, true) with ordinality as s (job_id, duplicate, ord);
    -- every member to the first callback, ended with the member however it ends
    insert into jobctl._edge (parent_id, child_id, on_end)
    select m.id, v_cb[1], true from unnest(v_ids) as m (id);
    -- members that ended already (a dead or cancelled parent cancelled them): their edges go now
    perform jobctl._parents_ended(array(
        select j.job_id from jobctl.job as j
        where j.job_id = any(v_ids) and j.created_at = now() and j.state = 'cancelled'
    ));
    return query select v_batch, v_ids, v_cb[array_position(v_which, 'on_finish')],
        v_cb[array_position(v_which, 'on_success')], v_cb[array_position(v_which, 'on_discard')];
end
$$;

comment on function jobctl.submit_batch(jsonb, jsonb, jsonb, jsonb) is
'Submit jobs (submit_jobs'' objects, one tenant''s, without dedup_key; 1 to 10,000) as a batch with callbacks,
each a job object like theirs (tenant_id defaults to theirs): on_finish is enqueued when the last member ends
(completed, dead or cancelled), on_success then if every member completed, on_discard then if any did not; the
callback that does not apply is cancelled. Each is enqueued exactly once however the members'' ends race. A
callback reads the counts by outcome with jobctl.get_batch(batch_id) (the job''s batch_id). Returns the batch
id, the members'' ids in input order and the callbacks'' ids.
Errors: JC001 a bad field (named with its element, as jobs[3].priority), no callback, members of several
tenants, a dedup_key, JC002 a payload over 64 KiB, JC003 a bad backoff, JC004 over max_pending, JC005 over the
submit rate, JC008 the tenant encrypts and the session lacks its key, 42501 another tenant.
Example:
select * from jobctl.submit_batch(
  ''[{"tenant_id": "acme", "queue": "thumbs", "payload": {"img": 1}},
    {"tenant_id": "acme", "queue": "thumbs", "payload": {"img": 2}}]'',
  on_finish => ''{"queue": "notify", "payload": {"album": 7}}'');';
