-- jobctl.claim_metrics: per tenant and queue, the jobs claimed in the last window_length, their rate
-- and the p50 / p99 wait from due to claimed. Bad window_length: JC001. Tenants tap_cm_t, tap_cm_u;
-- queues tap_cm_*; every claim names its queues.
begin;
select plan(24);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function(
    'jobctl', 'claim_metrics', array['interval', 'text', 'text'], 'claim_metrics(window_length, only_tenant, only_queue) exists'
);
select function_returns(
    'jobctl', 'claim_metrics', array['interval', 'text', 'text'], 'setof record', 'it returns a set of rows'
);

-- tenant t, queue q1: three jobs due 10, 20 and 30 s ago, and one due tomorrow (not claimed);
-- tenant t, queue q2: two jobs due now; tenant u, queue q1: one job due now
do $do$
begin
    perform jobctl.submit_job('tap_cm_t', 'tap_cm_q1', '{}', run_at => now() - make_interval(secs => 10 * n))
    from generate_series(1, 3) as n;
    perform jobctl.submit_job('tap_cm_t', 'tap_cm_q1', '{}', run_at => now() + interval '1 day');
    perform jobctl.submit_job('tap_cm_t', 'tap_cm_q2', '{}') from generate_series(1, 2);
    perform jobctl.submit_job('tap_cm_u', 'tap_cm_q1', '{}');
    perform jobctl.submit_job('tap_cm_u', 'tap_cm_q3', '{}');  -- never claimed
end
$do$;
create temp table c as
select * from jobctl.claim_job('tap_cm_w', array['tap_cm_q1', 'tap_cm_q2'], 10);
select is((select count(*) from c), 6::bigint, 'six jobs are claimed');

-- the tap rows of claim_metrics
create function pg_temp.metrics(p_window interval default '1 minute')
returns table (
    tenant_id text, queue text, claims bigint, claims_per_s double precision, wait_p50_s double precision,
    wait_p99_s double precision
)
language sql as $$
    select m.* from jobctl.claim_metrics(p_window) as m where m.tenant_id in ('tap_cm_t', 'tap_cm_u')
$$;

select results_eq(
    $$select tenant_id, queue, claims from pg_temp.metrics()$$,
    $$values ('tap_cm_t', 'tap_cm_q1', 3::bigint), ('tap_cm_t', 'tap_cm_q2', 2), ('tap_cm_u', 'tap_cm_q1', 1)$$,
    'one row per tenant and queue with claims, ordered, counting the claimed jobs only'
);
select results_eq(
    $$select claims_per_s from pg_temp.metrics()$$,
    $$values (3 / 60.0::float8), (2 / 60.0::float8), (1 / 60.0::float8)$$,
    'claims_per_s: claims over the 60 s window'
);
select ok(
    (select bool_and(wait_p50_s >= 0 and wait_p99_s >= 0) from pg_temp.metrics()), 'every wait is >= 0'
);
select ok(
    (select bool_and(wait_p50_s <= wait_p99_s) from pg_temp.metrics()), 'p50 <= p99 in every row'
);

-- the waits of tap_cm_t/tap_cm_q1, from the job rows: w1 < w2 < w3 (about 10, 20, 30 s)
create temp table w as
select
    row_number() over (order by extract(epoch from j.started_at - j.run_at)) as i,
    extract(epoch from j.started_at - j.run_at)::float8 as wait
from jobctl.job as j inner join c on j.job_id = c.job_id
where c.tenant_id = 'tap_cm_t' and c.queue = 'tap_cm_q1';
select ok(
    (select bool_and(wait between 10 * i and 10 * i + 5) from w), 'the three waits are about 10, 20 and 30 s'
);
select results_eq(
    $$select round(wait_p50_s::numeric, 6) from pg_temp.metrics() where tenant_id = 'tap_cm_t' and queue = 'tap_cm_q1'$$,
    $$select round(wait::numeric, 6) from w where i = 2$$,
    'p50 of three waits: the middle one'
);
select results_eq(
    $$select round(wait_p99_s::numeric, 6) from pg_temp.metrics() where tenant_id = 'tap_cm_t' and queue = 'tap_cm_q1'$$,
    $$select round((w2.wait + 0.98 * (w3.wait - w2.wait))::numeric, 6) from w as w2, w as w3 where w2.i = 2 and w3.i = 3$$,
    'p99 of three waits: interpolated 98% of the way from the second to the third'
);
select results_eq(
    $$select wait_p50_s < 1 from pg_temp.metrics() where tenant_id = 'tap_cm_u' and queue = 'tap_cm_q1'$$,
    $$values (true)$$,
    'a job claimed as soon as it was due waits well under a second'
);

-- a longer window: the same claims at a lower rate
select results_eq(
    $$select claims, claims_per_s from pg_temp.metrics('10 minutes') where tenant_id = 'tap_cm_t' and queue = 'tap_cm_q1'$$,
    $$values (3::bigint, 3 / 600.0::float8)$$,
    'over 10 minutes: 3 claims, 3/600 per second'
);

-- a claim moved two minutes into the past leaves the one-minute window but not the five-minute one
update jobctl.job as j set started_at = j.started_at - interval '2 minutes'
from c
where j.job_id = c.job_id and c.tenant_id = 'tap_cm_u';
select is_empty(
    $$select * from pg_temp.metrics() where tenant_id = 'tap_cm_u'$$, 'a claim two minutes ago: not in the last minute'
);
select results_eq(
    $$select claims from pg_temp.metrics('5 minutes') where tenant_id = 'tap_cm_u'$$, $$values (1::bigint)$$,
    'but in the last five'
);
select lives_ok($$select * from jobctl.claim_metrics('1 day')$$, 'a window of exactly 1 day is accepted');

-- jobs whose attempt ended and that wait for their next one: the job row keeps the old attempt's
-- started_at but run_at is the next due time (a failure's backoff, a release's now)
-- waits stay >= 0: a failed job waiting out a 10 s backoff would otherwise show about -10 s
do $do$
begin
    perform jobctl.submit_job(
        'tap_cm_v', 'tap_cm_q4', '{}', backoff => '{"strategy": "fixed", "base": "10 seconds", "jitter": false}'
    );
    perform jobctl.submit_job('tap_cm_v', 'tap_cm_q5', '{}');
    perform jobctl.fail_job(x.job_id, x.lease_epoch, 'boom') from jobctl.claim_job('tap_cm_w', array['tap_cm_q4']) as x;
    perform jobctl.release_job(x.job_id, x.lease_epoch) from jobctl.claim_job('tap_cm_w', array['tap_cm_q5']) as x;
end
$do$;
select is_empty(
    $$select m.queue, m.wait_p50_s from jobctl.claim_metrics() as m
      where m.tenant_id = 'tap_cm_v' and m.queue = 'tap_cm_q4' and (m.wait_p50_s < 0 or m.wait_p99_s < 0)$$,
    'a failed job waiting for its retry adds no negative wait (listed: the rows with one)'
);
select is_empty(
    $$select m.queue, m.wait_p50_s from jobctl.claim_metrics() as m
      where m.tenant_id = 'tap_cm_v' and m.queue = 'tap_cm_q5' and (m.wait_p50_s < 0 or m.wait_p99_s < 0)$$,
    'a released job adds no negative wait (listed: the rows with one)'
);

-- bad windows
select throws_ok(
    $$select * from jobctl.claim_metrics(null)$$, 'JC001', 'window_length must be positive and at most 1 day',
    'a NULL window: JC001'
);
select throws_ok(
    $$select * from jobctl.claim_metrics('0 seconds')$$, 'JC001', 'window_length must be positive and at most 1 day',
    'a zero window: JC001'
);
select throws_ok(
    $$select * from jobctl.claim_metrics('-1 minute')$$, 'JC001', 'window_length must be positive and at most 1 day',
    'a negative window: JC001'
);
select throws_ok(
    $$select * from jobctl.claim_metrics('1 day 1 second')$$, 'JC001',
    'window_length must be positive and at most 1 day', 'a window over 1 day: JC001'
);

-- the filters
select results_eq(
    $$select distinct tenant_id from jobctl.claim_metrics('1 minute', 'tap_cm_t') where tenant_id like 'tap_cm_%'$$,
    array['tap_cm_t'],
    'only_tenant: rows of that tenant only'
);
select is_empty(
    $$select from jobctl.claim_metrics('1 minute', 'tap_cm_t', 'no_such_queue')$$,
    'only_queue: a queue without claims gives no rows'
);

select isnt(obj_description('jobctl.claim_metrics(interval, text, text)'::regprocedure), null, 'claim_metrics has a comment');

select * from finish();
rollback;
