-- jobctl.claim_job: claim up to max_jobs due jobs under a lease.
--
-- Fairness without shared counters (systematic sampling): the lanes (queue, tenant) with due work
-- are laid end to end in random order, each as long as its tenant's weight, and max_jobs points
-- spaced evenly from a random offset fall on them. A lane gets the points on it: in expectation
-- exactly max_jobs * weight / total, never more than one away from it, and a single claim picks a
-- lane with probability weight / total. Nothing is updated to keep score, so no hot row.
-- Within a lane: higher priority, then earlier run_at, then lower id.
-- max_running: a claimer takes a transaction-level advisory lock per limited tenant (skipping
-- the tenant if another claimer holds it) and then counts that tenant's running jobs in a later
-- statement, whose snapshot therefore includes every earlier claim.
-- Before claiming it promotes due delayed jobs and, at most once a second, reaps expired leases.
-- Locks: _ready rows FOR UPDATE SKIP LOCKED, then the job rows. Writes: _ready (delete),
-- job (update), _running (insert), and through jobctl._housekeep _delayed, _ready, _event.
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
    v_lane_w integer[];
    v_lane_limited boolean[];
    v_ids bigint[];
    v_cas timestamptz[];
    v_short_q text[];
    v_short_t text[];
    v_round integer := 0;
    v_offset float8;
    v_cached boolean := false;
    v_short_before integer := 0;
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

    perform jobctl._housekeep(v_left);

    loop
        v_round := v_round + 1;
        if v_round = 1 or v_cached then
            -- the session's recent lanes first; a fresh list once they come up short
            select l.queues, l.tenants, l.weights, l.limited, l.cached
            into v_lane_q, v_lane_t, v_lane_w, v_lane_limited, v_cached
            from jobctl._lanes(v_queues, v_round > 1) as l;
            if cardinality(v_lane_q) = 0 then
                return;
            end if;
            -- Lanes of limited tenants whose lock another claimer holds sit this claim out.
            select v_short_q || array_agg(x.queue), v_short_t || array_agg(x.tenant_id) into v_short_q, v_short_t
            from unnest(v_lane_q, v_lane_t, v_lane_limited) as x (queue, tenant_id, limited)
            where case when x.limited then not pg_try_advisory_xact_lock(19013, hashtext(x.tenant_id)) else false end;
        end if;
        v_offset := random();
        with lane as (
            select
                x.queue, x.tenant_id, x.weight,
                case when x.limited then (
                    select t.max_running - (select count(*) from jobctl._running as r where r.tenant_id = x.tenant_id)
                    from jobctl.tenant as t where t.tenant_id = x.tenant_id
                ) end as room,
                random() as shuffle
            from unnest(v_lane_q, v_lane_t, v_lane_w, v_lane_limited) as x (queue, tenant_id, weight, limited)
            where (x.queue, x.tenant_id) not in (select * from unnest(v_short_q, v_short_t))
        ),
        spread as (
            -- lanes laid end to end in random order, each as long as its weight
            select
                l.*,
                sum(l.weight) over (order by l.shuffle rows unbounded preceding) as upto,
                sum(l.weight) over () as total
            from lane as l
        ),
        share as (
            -- v_left points spaced total / v_left apart from a random offset: the points in a lane
            select
                s.queue, s.tenant_id, s.room,
                (ceil(s.upto::float8 * v_left / s.total - v_offset)
                 - ceil((s.upto - s.weight)::float8 * v_left / s.total - v_offset))::integer as n
            from spread as s
        ),
        winner as (
            -- a tenant with max_running gets no more than its room, across all its lanes
            select c.queue, c.tenant_id, c.n
            from (
                select
                    h.queue, h.tenant_id,
                    case when h.room is null then h.n else least(h.n, greatest(h.room - coalesce(sum(h.n) over (
                        partition by h.tenant_id order by h.queue rows between unbounded preceding and 1 preceding
                    ), 0), 0)) end as n
                from share as h
            ) as c
            where c.n > 0
        ),
        taken as (
            select w.queue, w.tenant_id, w.n, r.rid, r.job_id, r.created_at
            from winner as w
            cross join lateral (
                select r.ctid as rid, r.job_id, r.created_at from jobctl._ready as r
                where r.queue = w.queue and r.tenant_id = w.tenant_id
                order by r.priority desc, r.run_at, r.job_id
                limit w.n
                for update skip locked
            ) as r
        ),
        gone as (
            delete from jobctl._ready as r
            where r.ctid = any(array(select t.rid from taken as t))
            returning r.job_id, r.created_at
        ),
        short as (
            select w.queue, w.tenant_id
            from winner as w
            left join (select t.queue, t.tenant_id, count(*) as got from taken as t group by 1, 2) as g
                using (queue, tenant_id)
            where coalesce(g.got, 0) < w.n
        )
        select
            (select array_agg(g.job_id) from gone as g),
            (select array_agg(g.created_at) from gone as g),
            v_short_q || (select array_agg(s.queue) from short as s),
            v_short_t || (select array_agg(s.tenant_id) from short as s)
        into v_ids, v_cas, v_short_q, v_short_t;

        if v_ids is not null then
            return query
            with claimed as (
                update jobctl.job as j
                set state = 'running',
                    attempt = j.attempt + 1,
                    lease_epoch = nextval('jobctl.lease_epoch_seq'),
                    worker_id = v_worker,
                    started_at = v_now,
                    finished_at = null
                where j.job_id = any(v_ids) and j.created_at = any(v_cas)
                returning j.job_id, j.created_at, j.tenant_id, j.queue, j.payload, j.priority, j.attempt,
                    j.max_attempts, j.lease_epoch, j.timeout
            ),
            leased as (
                insert into jobctl._running (
                    job_id, created_at, tenant_id, queue, attempt, lease_epoch, worker_id, started_at,
                    lease_expires_at, deadline
                )
                select c.job_id, c.created_at, c.tenant_id, c.queue, c.attempt, c.lease_epoch, v_worker, v_now,
                    v_now + v_lease, v_now + c.timeout
                from claimed as c
            )
            select c.job_id, c.tenant_id, c.queue, c.payload, c.priority::integer, c.attempt, c.max_attempts,
                c.lease_epoch, v_now + v_lease, c.timeout
            from claimed as c;
            v_left := v_left - cardinality(v_ids);
        end if;
        -- another round only for the share of lanes that ran dry or were taken by other claimers
        exit when v_left = 0 or v_round >= 3 or coalesce(cardinality(v_short_q), 0) = v_short_before
            or (coalesce(cardinality(v_short_q), 0) >= cardinality(v_lane_q) and not v_cached);
        v_short_before := coalesce(cardinality(v_short_q), 0);
    end loop;
end
$$;

comment on function jobctl.claim_job(text, text[], integer, interval) is
'Claim up to max_jobs (1..1000) due jobs from the given queues (NULL: all) under a lease; each comes back running
with attempt + 1 and a new lease_epoch (fencing token) greater than any before. Never hands one job to two callers.
Across tenants, claims are shared by weight (lottery over lanes); within a tenant''s queue, higher priority first.
Paused tenants are skipped; max_running holds under concurrent claimers. Errors: JC001 bad argument.';
