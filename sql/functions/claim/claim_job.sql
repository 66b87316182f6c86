-- jobctl.claim_job: claim up to max_jobs due jobs under a lease, as a pipeline of steps, each a
-- function of its own (docs/design.md §3):
--   check (_claim_check) -> due (_promote_due) -> lanes (_lanes) -> pick (_pick) -> cap (_cap)
--   -> take (_take) -> start (_start_attempts)
-- A round picks lanes for the jobs still wanted; lanes that gave fewer than wanted leave play and
-- the rest is spread again, at most three rounds. A claim that got nothing from a shared lane list
-- that may be out of date lists the lanes afresh once. Periodic work (reaping, schedules, the
-- slots' rotation) is jobctl.tick's: a claim never submits and takes no lock stronger than row
-- locks, but _epoch_guard's once after a crash.
-- Calls: _claim_check, _promote_due (when _delayed has a due row), _recheck_waiting (when _recheck
-- has a row), _acting_tenants, then per round _lanes, _pick, _cap, _take, _start_attempts.
-- Locks: _ready rows FOR UPDATE SKIP LOCKED (_take), then the job rows (_start_attempts); the
-- tenant and queue rows of limited lanes FOR NO KEY UPDATE SKIP LOCKED (_cap), the try-lock lanes
-- (_lanes), _delayed and _recheck rows SKIP LOCKED and the key locks of keyed jobs made due
-- (_promote_due, _recheck_waiting), _epoch_guard EXCLUSIVE on the first claim after a crash
-- (_raise_epochs), _notify's try-locks hint-busy and hint (_promote_due). All to the end of the
-- transaction.
-- Writes: _ready (delete: _take), job (update), _running and _stat_delta (insert: _start_attempts);
-- through _promote_due _delayed (delete), _ready, _held, _stat_delta (insert); through _lanes
-- _lane_cache (insert); through _recheck_waiting _recheck (delete) and the unblocked children's
-- rows; the sequences lease_epoch_seq and the claim rate buckets (_take).
create or replace function jobctl.claim_job(
    worker_id text,
    queues text[] default null,
    max_jobs integer default 1,
    lease interval default '30 seconds',
    flush boolean default true
)
returns table (
    job_id bigint,
    tenant_id text,
    queue text,
    payload jsonb,
    priority integer,
    attempt integer,
    max_attempts integer,
    lease_epoch bigint,
    lease_expires_at timestamptz,
    timeout interval,
    traceparent text
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
set jit = off  -- a generic plan's estimates at depth pass jit_above_cost, and JIT compiles per call
as $$
#variable_conflict use_column
declare
    v_left integer := claim_job.max_jobs;
    v_tenants text[];          -- the caller's tenants (NULL: all)
    v_lanes jobctl._lane_set;
    v_skip integer[];          -- lanes out of play: other tenants' (the first v_foreign), then short ones
    v_foreign integer;
    v_pick jobctl._picks;
    v_took jobctl._took;
    v_round integer := 0;
    v_due boolean;
    v_recheck boolean;
begin
    perform jobctl._claim_check(claim_job.worker_id, claim_job.queues, v_left, claim_job.lease);
    if not claim_job.flush then
        -- the commit does not wait for its WAL flush: a claim lost in a crash is claimed again, and its
        -- epoch is never handed out again (jobctl._raise_epochs; docs/design.md, Fencing across a crash)
        perform set_config('synchronous_commit', 'off', true);
    end if;
    -- delayed jobs whose time came, and children racing parents' ends left waiting (docs/workflows.md).
    -- The earliest run_at is the head of _delayed's index, whatever the plan (min: a one-row index
    -- scan): a range test's generic plan, made while the table was small, scans the whole table,
    -- and jobs delayed far ahead or parked (docs/durable.md) would make every claim read them all
    select coalesce((select min(d.run_at) from jobctl._delayed as d) <= clock_timestamp(), false),
        exists (select from jobctl._recheck)
    into v_due, v_recheck;
    if v_due then
        perform jobctl._promote_due(greatest(v_left * 4, 1000));
    end if;
    if v_recheck then
        perform jobctl._recheck_waiting();
    end if;
    v_tenants := jobctl._acting_tenants('jobs:work');
    loop
        v_round := v_round + 1;
        if v_round = 1 or (v_lanes.cached and v_left = claim_job.max_jobs
                           and (v_pick.lanes is null or cardinality(v_skip) > v_foreign)) then
            v_lanes := jobctl._lanes(claim_job.queues, v_round > 1);
            -- the shared list has every tenant's lanes: a caller acting for some sees only theirs
            v_skip := case when v_tenants is null then '{}' else array(
                select u.i from unnest(v_lanes.tenants) with ordinality as u (t, i) where u.t <> all(v_tenants)
            ) end;
            v_foreign := cardinality(v_skip);
        end if;
        v_pick := jobctl._pick(v_lanes.lows, v_lanes.total, v_skip, v_left, random());
        if v_pick.lanes is null then
            -- no lane in play: a list that may predate the jobs just submitted is looked at afresh
            exit when not v_lanes.cached or v_left < claim_job.max_jobs;
            continue;
        end if;
        v_pick := jobctl._cap(v_lanes.queues, v_lanes.tenants, v_lanes.limited, v_pick);
        v_took := jobctl._take(v_lanes.queues, v_lanes.tenants, v_pick);
        v_skip := v_skip || v_took.short;
        if v_took.ids is not null then
            -- the lease starts now, not when the call began (a claim rate counts by started_at)
            return query select * from jobctl._start_attempts(
                v_took.ids, v_took.cas, claim_job.worker_id, clock_timestamp(), claim_job.lease
            );
            v_left := v_left - cardinality(v_took.ids);
        end if;
        exit when v_left = 0 or v_round >= 3 or cardinality(v_skip) = v_foreign;
    end loop;
end
$$;

comment on function jobctl.claim_job(text, text[], integer, interval, boolean) is
'Claim up to max_jobs (1..1000) due jobs from the given queues (NULL: all) under a lease. Each comes
back running with attempt + 1 and a new lease_epoch (fencing token) greater than any before. Never hands one job
to two callers. traceparent: the W3C trace context the job was submitted with (NULL: none). Across tenants, claims are shared by weight (a tenant''s weight is split evenly over its queues in
the filter); within a tenant''s queue, higher priority first, then earlier run_at. Paused tenants and queues are
skipped; a tenant''s and a queue''s max_running and claim_rate (with its burst) hold under concurrent claimers, which
then take fewer jobs. A sealed payload the session has no key for comes back as its envelope. Needs READ COMMITTED.
flush (default true): false lets the claim commit without waiting for its WAL flush (synchronous_commit off for
the rest of the transaction; only for a transaction that writes nothing else that must survive a crash). A claim lost
in a crash comes back as pending and is claimed again; its epoch is never handed out again, so the lost claim''s
worker is fenced.
Errors: JC001 a bad argument (worker_id, max_jobs, lease over 1 day, queues with NULL or over 1,000 names),
JC007 called under REPEATABLE READ or SERIALIZABLE, JC008 jobctl.payload_keys is not JSON.
Example:
select job_id, lease_epoch, payload
from jobctl.claim_job(''worker-1'', array[''email''], max_jobs => 10, lease => ''1 minute'');';
