-- jobctl._submit: the one submit path behind submit_job (all but its plain jobs), submit_jobs,
-- submit_workflow and submit_batch; all or nothing. A pipeline of steps, each a function of its own
-- (docs/design.md §5):
--   check (_submit_check) -> tenants (_submit_tenants) -> seal (_seal_specs) -> dedup (_dedup_holders)
--   -> limits (_submit_limits) -> insert (_insert_jobs) -> debounce (_debounce_repeats) -> notify (_notify)
-- Returns (job_id, duplicate) in input order: a repeat of a dedup key answers its holder's id.
-- Commits synchronously. p_batch: errors name the job (jobs[3].priority). p_caller: the caller's
-- own submit, for its tenants only (jobctl._acting_tenants), with the payloads of tenants that
-- encrypt theirs sealed with its key; false for a schedule's run, which pg_cron or any claimer's
-- housekeeping enqueues for the schedule's tenant, and whose payload is configuration, stored as
-- given. p_workflow: the jobs are one workflow (submit_workflow). p_schedule, p_fire_time: the
-- schedule whose run every job of the call is, and its fire time (expand_schedules, run_schedule;
-- jobctl.schedule_runs). p_names: submit_workflow's names of the jobs, in input order.
-- Calls: _submit_check, _submit_tenants, _seal_specs (a tenant that encrypts), _dedup_holders (a
-- dedup key), _submit_limits (a limited tenant), _insert_jobs (unless every spec answers a holder),
-- _debounce_repeats (a dedup key), _notify.
-- Locks: through the steps the dedup lock on each dedup key and the key lock on each concurrency key
-- (_tenant_lock rows, waited for), the parents' job rows (FOR SHARE), _notify's try-locks.
-- Writes: through the steps tenant (new tenants), job, _stat_delta, _ready, _held, _delayed,
-- _waiting, _tenant_lock (a lock row's first use), _edge; debounced holders' job and queue rows;
-- the sequences job_id_seq, submit rate buckets and admitted counts.
create or replace function jobctl._submit(
    p_specs jobctl._job_spec[], p_batch boolean, p_caller boolean default true, p_workflow boolean default false,
    p_schedule text default null, p_fire_time timestamptz default null, p_names text[] default null
)
returns table (job_id bigint, duplicate boolean)
language plpgsql
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
set enable_seqscan = off
set jit = off  -- a generic plan's estimates at depth pass jit_above_cost, and JIT compiles per call (~14 ms)
as $$
#variable_conflict use_column
declare
    v_now timestamptz := now();
    v_call record;     -- linked, keyed (jobctl._submit_check)
    v_tenants record;  -- limited, sealing (jobctl._submit_tenants)
    v_held record;     -- specs, answers, dups, names (jobctl._dedup_holders)
    v_specs jobctl._job_spec[] := p_specs;  -- the specs that become jobs
    v_names text[] := p_names;              -- their names (submit_workflow's)
    v_answers bigint[];  -- keyed calls, per spec: -k the k-th new job, > 0 the id of the job holding its key
    v_dups boolean[];  -- keyed calls, per spec: whether it answers another spec's or an older job
    v_ids bigint[];    -- the new jobs' ids, in v_specs order
begin
    if p_specs is null or cardinality(p_specs) = 0 then
        return;
    end if;
    -- an acknowledged submit survives a failover: with a synchronous standby configured, this commit
    -- waits for it even where the cluster's default is local (docs/operations.md, failover). In the
    -- body: a SET clause would be undone before the commit it is meant for.
    perform set_config('synchronous_commit', 'on', true);
    -- (a step with OUT parameters is assigned to a record: a plain expression, no query to start)
    v_call := jobctl._submit_check(p_specs, p_batch, p_caller, v_now);
    v_tenants := jobctl._submit_tenants(p_specs, p_caller);
    if v_tenants.sealing then
        p_specs := jobctl._seal_specs(p_specs, p_batch);  -- every step after works on the sealed specs
        v_specs := p_specs;
    end if;
    if v_call.keyed then
        v_held := jobctl._dedup_holders(p_specs, p_names, v_now);
        v_specs := v_held.specs;
        v_answers := v_held.answers;
        v_dups := v_held.dups;
        v_names := v_held.names;
    end if;
    if v_tenants.limited then
        perform jobctl._submit_limits(v_specs);  -- the new jobs count, not the repeats
    end if;
    if v_specs is not null then  -- (NULL: every spec answers a holder)
        v_ids := jobctl._insert_jobs(v_specs, v_now, v_call.linked, p_workflow, p_schedule, p_fire_time, v_names);
    end if;
    if v_answers is null then
        return query select u.id, false from unnest(v_ids) as u (id);
    else
        perform jobctl._debounce_repeats(p_specs, v_answers, v_dups, v_ids);
        return query
        select case when u.answer > 0 then u.answer else v_ids[-u.answer] end, u.dup
        from unnest(v_answers, v_dups) as u (answer, dup);
    end if;
    perform jobctl._notify(array_agg(distinct s.queue))
    from unnest(p_specs) as s
    where (s.run_at is null or s.run_at <= v_now) and s.concurrency_key is null  -- (admitted ones: _admit's)
        and s.depends_on is null and s.after is null and s.callback_of is null;  -- (released ones: _unblock_children's)
end
$$;
