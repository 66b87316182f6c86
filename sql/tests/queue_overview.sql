-- jobctl.queue_overview: the queues list a page at a time, in name order after `after`, from the
-- counters (10,000 queues: tests/test_cardinality.py). Queues tap_qo_a..c.
begin;
select plan(5);

select jobctl.submit_jobs(jsonb_build_array(
    jsonb_build_object('tenant_id', 'tap_qo', 'queue', 'tap_qo_a', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_qo', 'queue', 'tap_qo_b', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_qo', 'queue', 'tap_qo_b', 'payload', '{}'::jsonb),
    jsonb_build_object('tenant_id', 'tap_qo', 'queue', 'tap_qo_c', 'payload', '{}'::jsonb)
));

select results_eq(
    $$select o.queue, o.pending from jobctl.queue_overview('tap_qo_a', 1) as o$$,
    $$values ('tap_qo_b'::text, 2::bigint)$$,
    'a page of 1 after tap_qo_a is tap_qo_b, with its depth'
);
select results_eq(
    $$select o.queue from jobctl.queue_overview('tap_qo_', 3) as o$$,
    $$values ('tap_qo_a'::text), ('tap_qo_b'), ('tap_qo_c')$$,
    'pages are in name order'
);
select lives_ok($$select * from jobctl.queue_overview(null, 1000)$$, 'max_rows 1000, the bound, is taken');
select throws_ok(
    $$select * from jobctl.queue_overview(null, 1001)$$, 'JC001',
    'max_rows must be between 1 and 1000, not 1001', 'one past the bound is refused'
);
select throws_ok(
    $$select * from jobctl.queue_overview(null, 0)$$, 'JC001',
    'max_rows must be between 1 and 1000, not 0', 'as is 0'
);

select * from finish();
rollback;
