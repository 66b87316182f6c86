-- jobctl._lanes: the "lanes" step of claim_job: the lanes with due work, as wide as their tenant's
-- weight split over its lanes, without paused tenants or queues or max_running 0, shared through
-- jobctl._lane_cache; a claim that got nothing from the shared list lists the lanes afresh, however
-- young the list. Tenants tap_age_* and tap_lanes_*, queues tap_age_q and tap_lanes_*.
begin;
select plan(11);
set local jit = off;
\ir helpers.psql

select jobctl.put_tenant('tap_age_t');

-- an empty shared list for the queue, fresh for an hour, listed just now
create function pg_temp.share_empty_list() returns void
language sql as $$
    delete from jobctl._lane_cache where queues_key = md5('{tap_age_q}');
    insert into jobctl._lane_cache (queues_key, fresh_until, queues, tenants, limited, lows, total, listed_at, generation)
    select md5('{tap_age_q}'), clock_timestamp() + interval '1 hour', '{}', '{}', '{}', '{}', 0, clock_timestamp(), g.generation
    from jobctl._lane_generation as g;
$$;

create function pg_temp.claim() returns bigint
language sql as $$
    select count(*) from jobctl.claim_job('tap_age_w', array['tap_age_q'], 10)
$$;

select pg_temp.share_empty_list();
select jobctl.submit_job('tap_age_t', 'tap_age_q', '{}');
select is(pg_temp.claim(), 1::bigint, 'a job in a lane a fresh shared list lacks: the empty claim lists and takes it');
select is(
    (
        select count(*) from jobctl._lane_cache
        where
            queues_key = md5('{tap_age_q}') and queues = '{tap_age_q}'
            and listed_at > clock_timestamp() - interval '1 minute' and listed_at < clock_timestamp()
    ), 1::bigint,
    'and shares what it listed, with its listed_at'
);

-- a job made due by the claim's own promotion is found as well
select pg_temp.share_empty_list();
create temp table s_later as
select * from jobctl.submit_job('tap_age_t', 'tap_age_q', '{}', run_at => now() + interval '1 hour');
select pg_temp.make_due(job_id) from s_later;
select is(pg_temp.claim(), 1::bigint, 'a delayed job the claim promoted is claimed at once');

-- the listing
select jobctl.put_tenant('tap_lanes_a', weight => 3);
select jobctl.put_tenant('tap_lanes_b', max_running => 5);
select jobctl.put_tenant('tap_lanes_off', max_running => 0);
select jobctl.put_tenant('tap_lanes_paused');
select jobctl.pause_tenant('tap_lanes_paused', true);
select count(*) from (
    select jobctl.submit_job(t, q, '{}')
    from unnest(
        array['tap_lanes_a', 'tap_lanes_a', 'tap_lanes_b', 'tap_lanes_off', 'tap_lanes_paused'],
        array['tap_lanes_q1', 'tap_lanes_q2', 'tap_lanes_q1', 'tap_lanes_q1', 'tap_lanes_q2']
    ) as x (t, q)
) as x;
create temp table l1 as
select l.* from jobctl._lanes(array['tap_lanes_q1', 'tap_lanes_q2'], false) as l;
select results_eq(
    $$select u.q, u.t, u.limited, coalesce(l.lows[u.i + 1], l.total) - u.low
      from l1 as l cross join unnest(l.queues, l.tenants, l.limited, l.lows) with ordinality as u (q, t, limited, low, i)
      order by u.i$$,
    $$values ('tap_lanes_q1', 'tap_lanes_a', false, 1.5::float8), ('tap_lanes_q1', 'tap_lanes_b', true, 1::float8),
             ('tap_lanes_q2', 'tap_lanes_a', false, 1.5::float8)$$,
    'a lane per queue and tenant, as wide as its weight over its lanes; paused and max_running 0 out; limited marked'
);
select is((select total from l1), 4::float8, 'the lanes end at the sum of the weights');
select is((select cached from l1), false, 'a listing is not cached');
select is(
    (
        select count(*)::integer from jobctl._lane_cache
        where queues_key = md5('{tap_lanes_q1,tap_lanes_q2}')
    ), 1,
    'and is shared: one row for the filter'
);
select is(
    (select l.queues from jobctl._lanes(array['tap_lanes_q1', 'tap_lanes_q2'], false) as l), (select queues from l1),
    'the next call gets the shared row'
);
select is(
    (
        select count(*)::integer from jobctl._lane_cache
        where queues_key = md5('{tap_lanes_q1,tap_lanes_q2}')
    ), 1,
    'without listing again'
);
-- a listing that read the settings before a pause committed, and shared its list after the pause
-- emptied the cache (two claimers racing): the list carries the generation before the pause's
create temp table raced as
select * from jobctl._lane_cache
where queues_key = md5('{tap_lanes_q1,tap_lanes_q2}');
select jobctl.pause_queue('tap_lanes_q2');
insert into jobctl._lane_cache select * from raced;
select is(
    (select l.queues from jobctl._lanes(array['tap_lanes_q1', 'tap_lanes_q2'], false) as l),
    array['tap_lanes_q1', 'tap_lanes_q1'],
    'a list shared after a pause but listed before it is not used: the next claim leaves the paused queue out'
);
select is(
    (select cardinality(l.queues) from jobctl._lanes(array['tap_lanes_none'], true) as l), 0,
    'a queue without due jobs: no lanes'
);

select * from finish();
rollback;
