-- jobctl.job_series: /metrics' job series bounded to max_series tenant queues of their own plus one
-- row ('' , '') summing the rest, so that the sums stay the totals (the size with
-- 10,000 queues: tests/test_cardinality.py). Tenant tap_js, queues tap_js_q1..3.
begin;
select plan(6);

select jobctl.submit_jobs(jsonb_build_array(
    jsonb_build_object('tenant_id', 'tap_js', 'queue', 'tap_js_q1', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_js', 'queue', 'tap_js_q1', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_js', 'queue', 'tap_js_q1', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_js', 'queue', 'tap_js_q2', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_js', 'queue', 'tap_js_q2', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_js', 'queue', 'tap_js_q3', 'payload', '{}'::jsonb)
));

select is(
    (
        select count(*)::integer from jobctl.job_series(1) as s
        where s.tenant_id <> ''
    ),
    1, 'max_series 1: one tenant queue has rows of its own'
);
select is(
    (
        select count(*)::integer from jobctl.job_series(1) as s
        where s.tenant_id = '' and s.queue = ''
    ),
    1, 'and one row sums every other'
);
select is(
    (select sum(s.pending)::bigint from jobctl.job_series(1) as s),
    (select sum(c.pending)::bigint from jobctl.job_counts() as c),
    'the series'' sums are the totals'
);
select ok(
    (
        select s.pending >= 3 from jobctl.job_series(100000) as s
        where s.tenant_id = 'tap_js' and s.queue = 'tap_js_q1'
    ),
    'at the bound, 100000, every tenant queue with unfinished jobs has its own row'
);
select throws_ok(
    $$select * from jobctl.job_series(100001)$$, 'JC001',
    'max_series must be between 1 and 100000, not 100001', 'one past the bound is refused'
);
select throws_ok(
    $$select * from jobctl.job_series(0)$$, 'JC001',
    'max_series must be between 1 and 100000, not 0', 'as is 0'
);

select * from finish();
rollback;
