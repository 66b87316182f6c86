-- jobctl.minute_rates: job_rates summed per minute over tenants and queues, with the wait's median
-- and 99th percentile from the summed histogram. Tenants tap_mr_*, queue tap_mr_q.
begin;
select plan(6);

select has_function(
    'jobctl', 'minute_rates', array['timestamp with time zone', 'text', 'text'],
    'minute_rates(since, tenant_id, queue) exists'
);

select jobctl.submit_job('tap_mr_a', 'tap_mr_q', '{}') from generate_series(1, 3);
select jobctl.submit_job('tap_mr_b', 'tap_mr_q', '{}') from generate_series(1, 2);
select count(*) from jobctl.claim_job('tap_mr_w', array['tap_mr_q'], 10);

select results_eq(
    $$select sum(submitted)::bigint, sum(claimed)::bigint
      from jobctl.minute_rates(now() - interval '1 hour', null, 'tap_mr_q')$$,
    $$values (5::bigint, 5::bigint)$$,
    'both tenants'' submits and claims, summed'
);
select results_eq(
    $$select sum(claimed)::bigint from jobctl.minute_rates(now() - interval '1 hour', 'tap_mr_a', 'tap_mr_q')$$,
    $$values (3::bigint)$$,
    'one tenant''s'
);
select set_eq(
    $$select minute, claimed from jobctl.minute_rates(now() - interval '1 hour', null, 'tap_mr_q')$$,
    $$select minute, sum(claimed)::bigint from jobctl.job_rates(now() - interval '1 hour', null, 'tap_mr_q')
      group by minute$$,
    'per minute, what job_rates gives summed over its rows'
);
select ok(
    (
        select bool_and(wait_p50 is not null and wait_p99 >= wait_p50)
        from jobctl.minute_rates(now() - interval '1 hour', null, 'tap_mr_q')
        where claimed > 0
    ),
    'a minute with claims has the wait''s median and 99th percentile'
);
select is_empty(
    $$select * from jobctl.minute_rates(now() - interval '1 hour', null, 'tap_mr_nothing')$$,
    'a queue without events: no minutes'
);

select * from finish();
rollback;
