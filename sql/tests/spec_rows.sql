-- jobctl._spec_rows: the specs of a submit with their 1-based positions, each spec whole.
begin;
select plan(4);

select has_function('jobctl', '_spec_rows', array['jobctl._job_spec[]'], '_spec_rows exists');

create temp table s as
select jobctl._job_specs($$[
    {"tenant_id": "tap_sr_a", "queue": "q1", "payload": {"i": 1}},
    {"tenant_id": "tap_sr_b", "queue": "q2", "payload": {"i": 2}, "priority": 5},
    {"tenant_id": "tap_sr_c", "queue": "q3", "payload": {"i": 3}}
]$$, false) as specs;

select results_eq(
    $$select r.ord, (r.spec).tenant_id, (r.spec).priority from jobctl._spec_rows((select s.specs from s)) as r$$,
    $$values (1, 'tap_sr_a', 0), (2, 'tap_sr_b', 5), (3, 'tap_sr_c', 0)$$,
    'each spec with its 1-based position, in input order'
);
select ok(
    (select bool_and(r.spec = (select s.specs from s)[r.ord]) from jobctl._spec_rows((select s.specs from s)) as r),
    'each spec whole, as the array holds it'
);
select is(
    (select count(*) from jobctl._spec_rows('{}'::jobctl._job_spec[])), 0::bigint, 'no specs: no rows'
);

select * from finish();
rollback;
