-- jobctl.claim_job: claim up to max_jobs due jobs under a lease.
--
-- Fairness without shared counters (systematic sampling): the lanes (queue, tenant) with due work
-- are laid end to end, each as long as its tenant's weight divided by the tenant's number of lanes
-- (so shares go by tenant, not by queue), and max_jobs points spaced evenly from
-- a random offset fall on them; width_bucket finds each point's lane by binary search. A lane gets
-- the points on it: in expectation exactly max_jobs * weight / total, never more than one away
-- from it, and a single claim picks a lane with probability weight / total. The work is
-- O(max_jobs * log lanes), and nothing is updated to keep score, so there is no hot row.
-- Within a lane: higher priority, then earlier run_at, then lower id.
-- Lane cursors: while a transaction open for over a second holds the xmin horizon back, the index
-- entries of claimed jobs cannot be marked dead and stay at the lanes' heads until their slot
-- partition is truncated, each a heap visit for every probe (docs/postgres-internals.md §1.4).
-- Then a session probes each lane from where it last left it in the current half-second slot
-- (jobctl.claim_cursor: priority, run_at, job_id), in three ranges: higher priorities, the rest of
-- the cursor's, lower ones. A cursor stays 50 ms of run_at behind the claim; a job that commits
-- further behind it (its transaction open longer, an old run_at) waits for the next slot, at most
-- half a second; jobs made due by the claim's housekeeping reset the cursors.
-- max_running and claim rates: a claimer takes a transaction-level advisory lock per limited
-- tenant (skipping the tenant if another claimer holds it) and then counts that tenant's running
-- jobs in a later statement, whose snapshot therefore includes every earlier claim, and reads
-- its claim bucket (jobctl._bucket_room), which it then takes from while still holding the lock.
-- Before claiming it promotes due delayed jobs and, at most once a second, reaps expired leases;
-- after, at most twice a second, it truncates the drained past slot partitions.
-- Locks: _ready rows FOR UPDATE SKIP LOCKED, then the job rows. Writes: _ready (delete), and
-- through jobctl._start_attempts job (update) and _running (insert), through jobctl._housekeep
-- _delayed, _ready, _event.
create or replace function jobctl.claim_job(
    worker_id text,
    queues text[] default null,
    max_jobs integer default 1,
    lease interval default '30 seconds'
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
    timeout interval
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
set jit = off  -- a generic plan's estimates at depth pass jit_above_cost, and JIT compiles per call (~14 ms)
as $$
#variable_conflict use_column
declare
    v_worker text := claim_job.worker_id;
    v_queues text[] := claim_job.queues;
    v_lease interval := claim_job.lease;
    v_left integer := claim_job.max_jobs;
    v_now timestamptz := clock_timestamp();
    v_lane_q text[];
    v_lane_t text[];
    v_lane_limited boolean[];
    v_lane_lows float8[];   -- each lane's lower bound when all are in play
    v_lane_total float8;
    v_lows float8[];        -- lower bound of each lane in play, for width_bucket
    v_total float8;
    v_offset float8;
    v_idx integer[];        -- lane numbers in play, parallel to v_lows (NULL: all, in order)
    v_cached boolean := true;
    v_skip integer[] := '{}';   -- lanes that came up short or whose tenant is busy: out of play
    v_tenants text[] := jobctl._acting_tenants('jobs:work');  -- the caller's (NULL: all)
    v_foreign integer := 0;     -- the first lanes of v_skip: other tenants', out of play for good
    v_pick integer[];       -- picked lanes: number, jobs wanted, queue, tenant, limited
    v_n integer[];
    v_pick_q text[];
    v_pick_t text[];
    v_pick_limited boolean[];
    v_ids bigint[];
    v_cas timestamptz[];
    v_rated boolean := false;  -- a picked lane's tenant has a claim rate
    v_took_t text[];           -- with one: the tenant of each job taken
    v_round integer := 0;
    v_made_due boolean;        -- housekeeping made jobs due: a shared list may lack their lanes
    v_rotated text := current_setting('jobctl.rotated_at', true);
    -- this session's lane cursors (see the header), kept for the half-second slot they were set in
    v_slot text := floor(extract(epoch from v_now) * 2)::bigint::text;
    v_cursor jsonb := coalesce(nullif(current_setting('jobctl.claim_cursor', true), ''), '{}')::jsonb;
    v_cursors boolean;         -- they are in use
    v_settled timestamptz := v_now - interval '50 milliseconds';
begin
    if v_worker is null or v_worker = '' or length(v_worker) > 200 then
        raise exception using errcode = 'JC001', message = 'worker_id must be a non-empty string of at most 200 characters';
    end if;
    if v_left is null or v_left not between 1 and 1000 then
        raise exception using errcode = 'JC001', message = format('max_jobs must be from 1 to 1000, not %s', coalesce(v_left::text, 'NULL'));
    end if;
    if v_lease is null or v_lease <= interval '0' or v_lease > interval '1 day' then
        raise exception using errcode = 'JC001', message = 'lease must be positive and at most 1 day';
    end if;
    if v_queues is not null and array_position(v_queues, null) is not null then
        raise exception using errcode = 'JC001', message = 'queues must not contain NULL';
    end if;
    -- max_running counts what earlier claims committed, and SKIP LOCKED meets rows other claimers
    -- deleted: both need a fresh snapshot per statement
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception using errcode = 'JC007',
            message = format('claim_job needs READ COMMITTED isolation, not %s', upper(current_setting('transaction_isolation'))),
            hint = 'Claim in autocommit mode or in a short READ COMMITTED transaction.';
    end if;

    v_made_due := jobctl._housekeep(v_left);
    -- the lane cursors hold for their half-second slot, while the xmin horizon is held back, and
    -- until housekeeping makes jobs due (theirs may lie behind a cursor)
    v_cursors := current_setting('jobctl.horizon_held', true) = 'true';
    v_cursor := case when v_cursors and not v_made_due and v_cursor ->> 'slot' = v_slot and length(v_cursor::text) < 8000
                     then v_cursor else jsonb_build_object('slot', v_slot) end;

    loop
        v_round := v_round + 1;
        if v_round = 1
           or (v_cached and v_left = claim_job.max_jobs and (cardinality(v_skip) > v_foreign or coalesce(v_total, 0) = 0)) then
            -- the shared lane list first; a fresh one when the shared one gave nothing (a claim that
            -- got jobs leaves new lanes to the next claim or refresh: listing costs more than a take)
            if v_round = 1 then
                -- a fresh shared row is read here: one probe instead of a call of _lanes
                -- (one listed in the last 20 ms is as good as a fresh one, unless housekeeping made
                -- jobs due: under a held snapshot a listing walks every dead entry of the drained
                -- lanes, and idle claimers listed hundreds of times a second)
                select c.queues, c.tenants, c.limited, c.lows, c.total,
                    c.listed_at < v_now - interval '20 milliseconds' or v_made_due
                into v_lane_q, v_lane_t, v_lane_limited, v_lane_lows, v_lane_total, v_cached
                from jobctl._lane_cache as c
                where c.queues_key = coalesce(v_queues::text, '*') and c.fresh_until > v_now
                order by c.fresh_until desc limit 1;
            end if;
            if v_round > 1 or not found then
                select l.queues, l.tenants, l.limited, l.lows, l.total, l.cached
                into v_lane_q, v_lane_t, v_lane_limited, v_lane_lows, v_lane_total, v_cached
                from jobctl._lanes(v_queues, v_round > 1) as l;
                -- no fresh list: another claimer is listing the lanes right now
                exit when v_round > 1 and v_cached;
            end if;
            v_lows := v_lane_lows;
            v_total := v_lane_total;
            v_idx := null;
            -- the shared list has every tenant's lanes: a caller acting for some sees only theirs
            v_skip := case when v_tenants is null then '{}' else array(
                select u.i from generate_subscripts(v_lane_t, 1) as u (i) where v_lane_t[u.i] <> all(v_tenants)
            ) end;
            v_foreign := cardinality(v_skip);
        end if;
        if cardinality(v_skip) >= cardinality(v_lane_q) then
            v_total := 0;  -- every lane is out of play (v_skip holds each lane once)
        elsif cardinality(v_skip) > 0 then
            -- take the skipped lanes out and lay the rest end to end again
            select array_agg(x.i order by x.i), array_agg(x.upto - x.w order by x.i), max(x.upto)
            into v_idx, v_lows, v_total
            from (
                select y.i, y.w, sum(y.w) over (order by y.i rows unbounded preceding) as upto
                from (
                    select u.i, coalesce(v_lane_lows[u.i + 1], v_lane_total) - v_lane_lows[u.i] as w
                    from generate_subscripts(v_lane_q, 1) as u (i)
                    where u.i <> all(v_skip)
                ) as y
            ) as x;
        end if;
        if coalesce(v_total, 0) = 0 then
            -- a shared list may predate the jobs just submitted: an empty one is checked afresh
            exit when not v_cached or v_left < claim_job.max_jobs;
            continue;
        end if;

        -- where the v_left evenly spaced points fall, and those lanes' names by subscript: plpgsql
        -- keeps array variables expanded, so v_lane_q[i] is O(1) (a join with unnest of the
        -- lanes cost 0.23 ms a claim at 1,000 lanes, the subscripts 5 µs). All points fall on a
        -- lone lane in play: simple expressions, no statement (placing 200 points cost ~70 µs).
        if coalesce(cardinality(v_idx), cardinality(v_lane_q)) = 1 then
            v_pick := array[coalesce(v_idx[1], 1)];
            v_n := array[v_left];
            v_pick_q := array[v_lane_q[v_pick[1]]];
            v_pick_t := array[v_lane_t[v_pick[1]]];
            v_pick_limited := array[v_lane_limited[v_pick[1]]];
        else
            v_offset := random();
            select array_agg(p.lane order by p.lane), array_agg(p.n order by p.lane),
                array_agg(v_lane_q[p.lane] order by p.lane), array_agg(v_lane_t[p.lane] order by p.lane),
                array_agg(v_lane_limited[p.lane] order by p.lane)
            into v_pick, v_n, v_pick_q, v_pick_t, v_pick_limited
            from (
                select coalesce(v_idx[b.bucket], b.bucket) as lane, count(*)::integer as n
                from generate_series(0, v_left - 1) as j (j)
                cross join lateral (select width_bucket((v_offset + j.j) * v_total / v_left, v_lows) as bucket) as b
                group by 1
            ) as p;
        end if;

        -- max_running and claim rates: lock each picked limited tenant (skip it if another claimer
        -- holds it), then, in a later statement that therefore sees every earlier claim, cap its
        -- picks by its room
        v_rated := false;
        if true = any(v_pick_limited) then
            v_skip := v_skip || array(
                select x.lane from unnest(v_pick, v_pick_t, v_pick_limited) as x (lane, tenant_id, limited)
                where x.limited and not pg_try_advisory_xact_lock(19013, hashtext(x.tenant_id))
            );
            -- (a lane whose share was cut is out of play for the next rounds: its tenant is full)
            select array_agg(c.lane order by c.lane) filter (where c.n > 0),
                array_agg(c.n order by c.lane) filter (where c.n > 0),
                array_agg(c.queue order by c.lane) filter (where c.n > 0),
                array_agg(c.tenant_id order by c.lane) filter (where c.n > 0),
                v_skip || coalesce(array_agg(c.lane) filter (where c.n < c.wanted), '{}'),
                coalesce(bool_or(c.rated) filter (where c.n > 0), false)
            into v_pick, v_n, v_pick_q, v_pick_t, v_skip, v_rated
            from (
                -- a tenant's room: the smaller of max_running less its running jobs and the tokens
                -- in its claim bucket (least() skips the one it lacks), less its earlier lanes' picks
                select p.lane, p.queue, p.tenant_id, p.n as wanted, t.claim_bucket is not null as rated,
                    -- (neither, when the shared lane list predates the tenant losing both: no cap)
                    case when not p.limited then p.n else least(p.n, greatest(coalesce(least(
                        t.max_running - (select count(*) from jobctl._running as r where r.tenant_id = p.tenant_id),
                        jobctl._bucket_room(t.claim_bucket, t.claim_rate, t.claim_burst)
                    ), p.n) - coalesce(sum(p.n) over (
                        partition by p.tenant_id order by p.lane rows between unbounded preceding and 1 preceding
                    ), 0), 0)) end as n
                from unnest(v_pick, v_n, v_pick_q, v_pick_t, v_pick_limited) as p (lane, n, queue, tenant_id, limited)
                left join jobctl.tenant as t on p.limited and t.tenant_id = p.tenant_id
                where p.lane <> all(v_skip)
            ) as c;
        end if;

        with taken as (
            select w.lane, r.rel, r.rid, r.job_id, r.created_at, r.priority, r.run_at
            from unnest(v_pick, v_n, v_pick_q, v_pick_t) as w (lane, n, queue, tenant_id)
            -- where this session left the lane (none: the lane's head, the first two ranges not
            -- scanned at all, a one-time filter; priorities are -100..100)
            cross join lateral (
                select k.at, coalesce((k.at ->> 0)::integer, 101) as p, coalesce((k.at ->> 1)::timestamptz, '-infinity') as run_at,
                    coalesce((k.at ->> 2)::bigint, 0) as job_id
                from (select v_cursor -> (w.queue || chr(31) || w.tenant_id) as at) as k
            ) as c
            -- the lane from there, in its order: higher priorities, the rest of the cursor's, lower
            -- ones; each branch runs only while the ones before it leave the limit unmet
            cross join lateral (
                select * from (
                    select r.tableoid as rel, r.ctid as rid, r.job_id, r.created_at, r.priority, r.run_at from jobctl._ready as r
                    where c.at is not null and r.queue = w.queue and r.tenant_id = w.tenant_id and r.priority > c.p
                    order by r.priority desc, r.run_at, r.job_id limit w.n for update skip locked
                ) as higher
                union all
                select * from (
                    select r.tableoid as rel, r.ctid as rid, r.job_id, r.created_at, r.priority, r.run_at from jobctl._ready as r
                    where c.at is not null and r.queue = w.queue and r.tenant_id = w.tenant_id and r.priority = c.p
                        and (r.run_at, r.job_id) > (c.run_at, c.job_id)
                    order by r.priority desc, r.run_at, r.job_id limit w.n for update skip locked
                ) as same
                union all
                select * from (
                    select r.tableoid as rel, r.ctid as rid, r.job_id, r.created_at, r.priority, r.run_at from jobctl._ready as r
                    where r.queue = w.queue and r.tenant_id = w.tenant_id and r.priority < c.p
                    order by r.priority desc, r.run_at, r.job_id limit w.n for update skip locked
                ) as lower
                limit w.n
            ) as r
        ),
        gone as (
            -- a TID scan of each partition; a ctid names a row only within its partition
            delete from jobctl._ready as r
            where r.ctid = any(array(select t.rid from taken as t))
                and (r.tableoid::text || r.ctid::text) = any(array(select t.rel::text || t.rid::text from taken as t))
            returning r.job_id, r.created_at
        )
        select
            (select array_agg(g.job_id) from gone as g),
            (select array_agg(g.created_at) from gone as g),
            case when v_rated then (select array_agg(v_lane_t[t.lane]) from taken as t) end,
            v_skip || array(
                select w.lane
                from unnest(v_pick, v_n) as w (lane, n)
                left join (select t.lane, count(*) as got from taken as t group by t.lane) as g on g.lane = w.lane
                where w.n > coalesce(g.got, 0) and w.lane <> all(v_skip)
            ),
            -- each lane's cursor moves to the last entry taken, but not past v_settled
            case when not v_cursors then v_cursor else v_cursor || coalesce((
                select jsonb_object_agg(
                    v_lane_q[l.lane] || chr(31) || v_lane_t[l.lane],
                    jsonb_build_array(l.priority, least(l.run_at, v_settled), case when l.run_at > v_settled then 0 else l.job_id end)
                )
                from (
                    select distinct on (t.lane) t.lane, t.priority, t.run_at, t.job_id from taken as t
                    order by t.lane, t.priority, t.run_at desc, t.job_id desc
                ) as l
            ), '{}') end
        into v_ids, v_cas, v_took_t, v_skip, v_cursor;

        if v_rated and v_ids is not null then
            -- claim rates: the tenant's advisory lock is held, so its room read above still holds
            perform jobctl._take_tokens(t.claim_bucket, t.claim_rate, t.claim_burst, g.n)
            from (select x.tenant_id, count(*)::integer as n from unnest(v_took_t) as x (tenant_id) group by 1) as g
            inner join jobctl.tenant as t on t.tenant_id = g.tenant_id
            where t.claim_bucket is not null;
        end if;
        if v_ids is not null then
            -- the lease starts now, not when the call began: housekeeping, a rotation or a lock wait
            -- may lie between (and a claim rate is then measured by started_at, taken after the tokens)
            return query
            select * from jobctl._start_attempts(v_ids, v_cas, v_worker, clock_timestamp(), v_lease);
            v_left := v_left - cardinality(v_ids);
        end if;
        -- another round only for the share of lanes that ran dry, were taken by other claimers or
        -- belong to a busy tenant
        exit when v_left = 0 or v_round >= 3 or cardinality(v_skip) = v_foreign;
    end loop;
    if v_cursors then
        perform set_config('jobctl.claim_cursor', v_cursor::text, false);
    end if;

    -- at most twice a second per session, the past slot partitions are truncated (jobctl._rotate_slots);
    -- after the claim, not before it: a TRUNCATE's ACCESS EXCLUSIVE lock lasts to the end of the
    -- transaction, and every claim and completion waits for it
    if v_rotated is null or v_rotated = '' or extract(epoch from clock_timestamp()) - v_rotated::float8 >= 0.5 then
        perform set_config('jobctl.rotated_at', extract(epoch from clock_timestamp())::text, false);
        perform jobctl._rotate_slots();
    end if;
end
$$;

comment on function jobctl.claim_job(text, text[], integer, interval) is
'Claim up to max_jobs (1..1000) due jobs from the given queues (NULL: all) under a lease; each comes back running
with attempt + 1 and a new lease_epoch (fencing token) greater than any before. Never hands one job to two callers.
Across tenants, claims are shared by weight (a tenant''s weight is split evenly over its queues in the filter);
within a tenant''s queue, higher priority first (while a transaction open over a second holds the xmin horizon back,
a job committed over 50 ms after its run_at may wait up to half a second). Paused tenants are skipped; max_running
and claim_rate (with its burst) hold under concurrent claimers, which then take fewer jobs. Needs READ COMMITTED. Errors: JC001 bad argument, JC007 other isolation level.';
