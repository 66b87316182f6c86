-- The counters: job_counts' gauges through every transition, the fold, the events
-- and histograms, job_rates, job_overview, fairness, histogram_quantile, recount_counters, bounds.
-- Tenants tap_ctr_*, queues tap_ctr_*; every claim names its queue. (Under concurrency:
-- tests/test_counters.py.)
begin;
select plan(34);
set local jit = off;
\ir helpers.psql

create function pg_temp.g(p_tenant text) returns text
language sql as $$
    select format('pending %s delayed %s retrying %s running %s dead %s completed %s cancelled %s',
        c.pending, c.delayed, c.retrying, c.running, c.dead, c.completed, c.cancelled)
    from jobctl.job_counts(p_tenant, 'tap_ctr_q') as c
$$;

select jobctl.put_tenant('tap_ctr_a', weight => 3);
select jobctl.put_tenant('tap_ctr_b');
create temp table j as
select
    g.g,
    (jobctl.submit_job(
        'tap_ctr_a', 'tap_ctr_q', jsonb_build_object('g', g), max_attempts => 2,
        backoff => '{"strategy": "fixed", "base": "1 hour", "jitter": false}'
    )).job_id as job_id
from generate_series(1, 3) as g (g);
select jobctl.submit_job('tap_ctr_a', 'tap_ctr_q', '{"later": true}', run_at => now() + interval '1 hour');
select is(
    pg_temp.g('tap_ctr_a'), 'pending 3 delayed 1 retrying 0 running 0 dead 0 completed 0 cancelled 0',
    'submits: three due, one delayed'
);

create temp table c as
select
    row_number() over (order by x.job_id) as n,
    x.job_id,
    x.lease_epoch
from jobctl.claim_job('tap_ctr_w', array['tap_ctr_q'], 3) as x;
select is(
    pg_temp.g('tap_ctr_a'), 'pending 0 delayed 1 retrying 0 running 3 dead 0 completed 0 cancelled 0',
    'a claim of three: running'
);
select ok((
    select jobctl.complete_job(c.job_id, c.lease_epoch) from c
    where c.n = 1
), 'one completes');
select is((
    select jobctl.fail_job(c.job_id, c.lease_epoch, 'x') from c
    where c.n = 2
), 'failed', 'one fails with a retry left');
select is((
    select jobctl.fail_job(c.job_id, c.lease_epoch, 'x', false) from c
    where c.n = 3
), 'dead', 'one dies');
select is(
    pg_temp.g('tap_ctr_a'), 'pending 0 delayed 1 retrying 1 running 0 dead 1 completed 1 cancelled 0',
    'completed, retrying (waiting out its hour of backoff), dead'
);
select
    ok((
        select not jobctl.complete_job(c.job_id, c.lease_epoch) from c
        where c.n = 1
    ), 'a second ack of the completed job is fenced');

-- the fold moves every delta into the totals; readers see the same before and after
create temp table before as select * from jobctl.job_counts('tap_ctr_a');
select cmp_ok(jobctl._stat_fold(), '>', 0, 'the fold folds the deltas');
select is_empty($$select from jobctl._stat_delta where tenant_id = 'tap_ctr_a'$$, 'none left behind');
select results_eq(
    $$select * from jobctl.job_counts('tap_ctr_a')$$, $$select * from before$$,
    'job_counts reads the same after the fold'
);
select results_eq(
    $$select submitted, claimed, succeeded, failed, died, fenced from jobctl.job_counts('tap_ctr_a', 'tap_ctr_q')$$,
    $$values (4::bigint, 3::bigint, 1::bigint, 2::bigint, 1::bigint, 1::bigint)$$,
    'events: 4 submitted, 3 claimed, 1 succeeded, 2 failed attempts, 1 died, 1 fenced ack'
);
select is(
    (select sum(x.n) from jobctl.job_counts('tap_ctr_a', 'tap_ctr_q') as c, unnest(c.wait_buckets) as x (n)), 3::numeric,
    'the wait histogram counts the three claims'
);
select is(
    (select sum(x.n) from jobctl.job_counts('tap_ctr_a', 'tap_ctr_q') as c, unnest(c.run_buckets) as x (n)), 3::numeric,
    'the run histogram counts the three ended attempts'
);
select is(
    (select cardinality(c.wait_buckets) from jobctl.job_counts('tap_ctr_a', 'tap_ctr_q') as c),
    cardinality(jobctl.histogram_bounds()) + 1, 'one bucket more than bounds'
);

-- cancel, retry by hand, release, promotion
select is((
    select jobctl.cancel_job(c.job_id) from c
    where c.n = 2
), 'cancelled', 'the retrying job is cancelled');
select is(
    pg_temp.g('tap_ctr_a'), 'pending 0 delayed 1 retrying 0 running 0 dead 1 completed 1 cancelled 1',
    'a cancel takes it from retrying to cancelled'
);
select is((
    select jobctl.retry_job(c.job_id) from c
    where c.n = 3
), 'pending', 'the dead job is retried: pending');
select is(
    pg_temp.g('tap_ctr_a'), 'pending 1 delayed 1 retrying 0 running 0 dead 0 completed 1 cancelled 1',
    'a retry takes it from dead to pending'
);
create temp table c2 as select * from jobctl.claim_job('tap_ctr_w', array['tap_ctr_q']);
select ok(jobctl.release_job((select job_id from c2), (select lease_epoch from c2)), 'a release');
select is(
    pg_temp.g('tap_ctr_a'), 'pending 1 delayed 1 retrying 0 running 0 dead 0 completed 1 cancelled 1',
    'a release takes it from running back to pending'
);
select pg_temp.make_due((
    select job_id from jobctl.job
    where tenant_id = 'tap_ctr_a' and payload ? 'later'
));
select cmp_ok(jobctl._promote_due(), '>=', 1, 'the delayed job is promoted');
select is(
    pg_temp.g('tap_ctr_a'), 'pending 2 delayed 0 retrying 0 running 0 dead 0 completed 1 cancelled 1',
    'a promotion takes it from delayed to pending'
);
select isnt(
    (select c.oldest_due_at from jobctl.job_counts('tap_ctr_a', 'tap_ctr_q') as c), null,
    'the oldest due job has a run_at'
);
select jobctl._stat_fold();
update jobctl._stat_probed set at = '-infinity';
select cmp_ok(jobctl._stat_probe(100000), '>=', 1, 'the tick''s probe looks at the busy lanes');
select is(
    (
        select s.oldest_due_at from jobctl._stat as s
        where s.tenant_id = 'tap_ctr_a' and s.queue = 'tap_ctr_q'
    ),
    (
        select min(r.run_at) from jobctl._ready as r
        where r.tenant_id = 'tap_ctr_a' and r.queue = 'tap_ctr_q'
    ),
    'and keeps the lane''s oldest due run_at for job_counts'
);
select is(jobctl._stat_probe(100000), 0, 'at most once a 100 ms');
select is_empty(
    $$select * from jobctl.recount_counters() where tenant_id like 'tap\_ctr\_%'$$,
    'recount_counters finds the gauges right'
);

-- job_rates, job_overview, fairness
select is(
    (select sum(r.claimed) from jobctl.job_rates(now() - interval '1 hour', 'tap_ctr_a') as r), 4::numeric,
    'job_rates: the four claims of this minute'
);
select results_eq(
    $$select pending, running, claims_per_second > 0, wait_p50 is not null from jobctl.job_overview(tenant_id => 'tap_ctr_a')$$,
    $$values (2::bigint, 0::bigint, true, true)$$, 'job_overview: gauges, claims a second, the wait median'
);
select throws_ok(
    $$select * from jobctl.job_overview('7 hours')$$, 'JC001',
    'window must be positive and at most 6 hours (the minutes the counters keep)', 'a window past the minutes kept'
);
select jobctl.submit_job('tap_ctr_b', 'tap_ctr_q', '{}');
select results_eq(
    $$select tenant_id, weight, claims from jobctl.fairness() where tenant_id like 'tap\_ctr\_%'$$,
    $$values ('tap_ctr_a'::text, 3, 4::bigint), ('tap_ctr_b', 1, 0::bigint)$$,
    'fairness: each tenant''s weight and claims in the window'
);
select is(
    (
        select round((f.weight_share * 100)::numeric) from jobctl.fairness() as f
        where f.tenant_id = 'tap_ctr_a'
    )
    > 0, true, 'a weight share for a tenant with due jobs'
);

-- histogram_quantile: interpolated inside the bucket; the open last bucket answers the last bound
select is(
    jobctl.histogram_quantile(0.5, array[0, 10]::bigint[]), 0.0075::double precision,
    'the median of ten times in [0.005, 0.01) is its middle'
);
select is(
    jobctl.histogram_quantile(0.99, '{0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,5}'::bigint[]), 3600::double precision,
    'times over the last bound answer the last bound'
);

select * from finish();
rollback;
