-- jobctl.submit_job: submit one job. A plain job is written here, by one statement: no dedup key,
-- parents or concurrency key, no rule of jobctl._spec_fault broken, a tenant of the caller's that is
-- registered and has no submit limits, no payload encryption and no move. Every other call, errors
-- included, goes through jobctl._submit, which raises them; what the plain path saves is in
-- docs/design.md §5.
-- Calls: _normalize_backoff, _parent_policy and _spec_fault (the spec), _acting_tenants, _notify
-- (a due plain job); every other call _submit.
-- Locks: on the plain path only _notify's try-locks hint-busy and hint on the queue (jobctl._lock
-- rows, skipped when held). Through _submit: the dedup lock on each dedup key and the key lock on
-- each concurrency key (_tenant_lock rows, waited for), the parents' job rows (FOR SHARE), the
-- same try-locks.
-- Writes: on the plain path job, _stat_delta, and _ready or _delayed (insert). Through _submit:
-- tenant (a new tenant), job, _stat_delta, _ready, _held, _delayed, _waiting (insert; _admit moves
-- the admitted from _held to _ready), _tenant_lock (a lock row's first use), _edge (a child's
-- edges) and, for children whose parents have ended, their rows as those parents' ends would write
-- them; a debounced repeat updates its holder's job row and moves its queue row; the sequences
-- job_id_seq, submit rate buckets and admitted counts.
create or replace function jobctl.submit_job(
    tenant_id text,
    queue text,
    payload jsonb,
    priority integer default 0,
    run_at timestamptz default null,
    dedup_key text default null,
    max_attempts integer default null,
    backoff jsonb default null,
    timeout interval default null,
    subject_key text default null,
    concurrency_key text default null,
    traceparent text default null,
    depends_on bigint[] default null,
    on_parent_failure text default 'cancel',
    dedup_states text[] default null,
    dedup_period interval default null,
    dedup_mode text default null
)
returns table (job_id bigint, duplicate boolean)
language plpgsql  -- not sql: a SQL function that is not inlined is planned on every call (docs/design.md §6)
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
declare
    v_spec jobctl._job_spec := row(
        submit_job.tenant_id, submit_job.queue, submit_job.payload, submit_job.priority,
        submit_job.run_at, submit_job.dedup_key, submit_job.max_attempts,
        jobctl._normalize_backoff(submit_job.backoff), submit_job.timeout, submit_job.subject_key,
        submit_job.concurrency_key, submit_job.traceparent, submit_job.depends_on, null,
        submit_job.on_parent_failure = 'cancel' or jobctl._parent_policy(submit_job.on_parent_failure), null, null,
        submit_job.dedup_states, submit_job.dedup_period, submit_job.dedup_mode
    )::jobctl._job_spec;
    v_now timestamptz := now();
    v_due timestamptz := coalesce(submit_job.run_at, v_now);
    v_tenants text[];
    v_id bigint;
begin
    if v_spec.dedup_key is null and v_spec.depends_on is null and v_spec.concurrency_key is null
       and v_spec.dedup_states is null and v_spec.dedup_period is null and v_spec.dedup_mode is null
       and jobctl._spec_fault(v_spec, 1, v_now, false, false) is null then
        v_tenants := jobctl._acting_tenants('jobs:submit');
        if (v_tenants is null or v_spec.tenant_id = any(v_tenants)) and exists (
            select from jobctl.tenant as t
            where t.tenant_id = v_spec.tenant_id and t.submit_bucket is null and t.admitted is null
                and not t.encrypt_payloads and t.moved_to is null
        ) then
            -- as in jobctl._submit: the commit waits for a synchronous standby, if one is configured
            perform set_config('synchronous_commit', 'on', true);
            with new_job as (
                insert into jobctl.job (
                    job_id, created_at, tenant_id, queue, priority, run_at, max_attempts, timeout, backoff,
                    payload, subject_key, traceparent, state
                )
                values (
                    nextval('jobctl.job_id_seq'), v_now, v_spec.tenant_id, v_spec.queue, v_spec.priority, v_due,
                    coalesce(v_spec.max_attempts, 3), v_spec.timeout, v_spec.backoff, v_spec.payload,
                    v_spec.subject_key, v_spec.traceparent, 'pending'
                )
                returning job_id
            ),
            tally as (
                insert into jobctl._stat_delta (tenant_id, queue, submitted, pending, delayed, waiting)
                values (v_spec.tenant_id, v_spec.queue, 1, (v_due <= v_now)::integer, (v_due > v_now)::integer, 0)
            ),
            new_ready as (
                insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
                select v_spec.queue, v_spec.tenant_id, v_spec.priority, v_due, n.job_id, v_now
                from new_job as n where v_due <= v_now
            ),
            new_delayed as (
                insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority)
                select v_due, n.job_id, v_now, v_spec.queue, v_spec.tenant_id, v_spec.priority
                from new_job as n where v_due > v_now
            )
            select n.job_id into v_id from new_job as n;
            if v_due <= v_now then
                perform jobctl._notify(array[v_spec.queue]);
            end if;
            return query select v_id, false;
            return;
        end if;
    end if;
    return query select s.job_id, s.duplicate from jobctl._submit(array[v_spec], false) as s;
end
$$;

comment on function jobctl.submit_job(
    text, text, jsonb, integer, timestamptz, text, integer, jsonb, interval, text, text, text, bigint[], text, text[],
    interval, text
) is
'Submit one job; returns its id, or the id of the job already holding (tenant_id, dedup_key) with
duplicate = true (nothing changed). The key''s holder is its newest job, in any state unless dedup_states names
the states that hold it (as {pending,running}: another job once it has run), and only if created in the current
dedup_period when one is given (1 s to 366 days, periods aligned to 2000-01-01: one job per key per hour).
dedup_mode keep (default) returns the holder as it is; replace (debounce) gives a pending holder this payload and
run_at; preserve_run_at this payload only (docs/workflows.md). run_at NULL = due now. priority -100..100, higher first. max_attempts NULL = 3.
backoff {"strategy": exponential|linear|fixed, "base", "max", "jitter"} (defaults exponential, 5 s, 1 h, true).
timeout: a running job past it is failed. subject_key: the person the payload is about (jobctl.forget_subject).
concurrency_key: at most the key''s limit (jobctl.put_concurrency_limit) of its jobs run at once, admitted in run_at
order. traceparent: the W3C trace context of the caller''s span (tracing; handed to the worker by claim_job).
depends_on: jobs of the same tenant (at most 10,000) that must complete first: the job is waiting until the last
of them completes, then pending (docs/workflows.md). on_parent_failure: cancel (default: a dead or cancelled parent
cancels it) or wait (it waits on; a retried parent that completes releases it).
A tenant first seen here is registered with the defaults. Only for the caller''s tenants.
Errors: JC001 naming the bad field, JC002 payload over 64 KiB, JC003 a bad backoff, JC004 over the tenant''s
max_pending, JC005 over its submit rate, JC001 depends_on naming a job that is not the tenant''s, JC006 dedup_key under REPEATABLE READ, JC008 the tenant encrypts and the
session lacks its key, 42501 another tenant.
Example:
select * from jobctl.submit_job(''acme'', ''email'', ''{"to": "a@example.com"}'', priority => 5, dedup_key => ''welcome-42'');
select * from jobctl.submit_job(''acme'', ''email'', ''{"to": "b@example.com"}'', run_at => now() + interval ''1 hour'',
    max_attempts => 5, backoff => ''{"strategy": "linear", "base": "30 seconds"}'');
select * from jobctl.submit_job(''acme'', ''report'', ''{}'', depends_on => array[41, 42]);  -- after 41 and 42 complete
select * from jobctl.submit_job(''acme'', ''sync'', ''{"customer": 7}'', dedup_key => ''sync-7'',
    dedup_states => ''{pending}'', dedup_mode => ''replace'', run_at => now() + interval ''30 seconds'');  -- debounce';
