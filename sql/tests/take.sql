-- jobctl._take: the "take" step of claim_job: each picked lane's jobs in the lane's order (higher
-- priority, earlier run_at, lower id), their _ready rows deleted, the lanes that came up short, and
-- the claim-rate tokens spent. (SKIP LOCKED against other claimers: tests/test_concurrency.py.)
-- Tenants tap_take_*, queues tap_take_*.
begin;
select plan(11);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', '_take', array['text[]', 'text[]', 'jobctl._picks'], '_take exists');

create temp table s as
select
    x.job_id,
    p.p as priority
from unnest(array[0, 5, 5, -3]) with ordinality as p (p, i)
cross join lateral jobctl.submit_job('tap_take_a', 'tap_take_q', '{}', priority => p.p) as x
order by p.i;
select jobctl.submit_job('tap_take_b', 'tap_take_q', '{}');

create temp table t1 as
select t.*
from
    jobctl._take('{tap_take_q,tap_take_q}', '{tap_take_a,tap_take_b}', row('{1,2}', '{3,1}', '{3,1}', false)::jobctl._picks) as t;
select set_eq(
    $$select unnest(ids) from t1$$,
    $$select job_id from s where priority >= 0 union all select job_id from jobctl.job where tenant_id = 'tap_take_b'$$,
    'three from the first lane in its order (the two of priority 5, then 0; not -3), one from the second'
);
select is((select cardinality(ids) from t1), 4, 'four in all');
select is(
    (
        select pg_temp.queued(job_id) from s
        where priority = -3
    ), 'ready',
    'the lowest priority is left'
);
select is((select short from t1), '{}'::integer[], 'no lane came up short');
select is(
    (
        select count(*)::integer from jobctl._ready
        where job_id = any(array(select unnest(t1.ids) from t1))
    ), 0,
    'the jobs'' _ready rows are gone'
);
select is(
    (select cas from t1),
    (
        select array_agg(j.created_at order by u.o) from unnest((select ids from t1)) with ordinality as u (id, o)
        inner join jobctl.job as j on j.job_id = u.id
    ),
    'created_at comes with each id'
);

-- a lane with fewer jobs than wanted, and one capped to nothing: both short
create temp table t2 as
select t.*
from
    jobctl._take('{tap_take_q,tap_take_q}', '{tap_take_a,tap_take_b}', row('{1,2}', '{3,2}', '{3,0}', false)::jobctl._picks) as t;
select results_eq(
    $$select cardinality(ids), short from t2$$,
    $$values (1, '{1,2}'::integer[])$$,
    'the last job of lane 1; lanes 1 (drained) and 2 (capped to nothing) came up short'
);

-- rated picks spend the claim bucket's tokens for the jobs taken
select jobctl.put_tenant('tap_take_r', claim_rate => 1, claim_burst => 5);
select jobctl.submit_job('tap_take_r', 'tap_take_q', '{}') from generate_series(1, 3);
create temp table room_before as
select jobctl._bucket_room(claim_bucket, claim_rate, claim_burst) as room from jobctl.tenant
where tenant_id = 'tap_take_r';
create temp table t3 as
select t.* from jobctl._take('{tap_take_q}', '{tap_take_r}', row('{1}', '{2}', '{2}', true)::jobctl._picks) as t;
select is((select cardinality(ids) from t3), 2, 'a rated lane gives its two');
select is(
    (
        select jobctl._bucket_room(claim_bucket, claim_rate, claim_burst) from jobctl.tenant
        where tenant_id = 'tap_take_r'
    ),
    (select room - 2 from room_before),
    'and the two tokens are spent'
);

select is(
    array(
        select pg_catalog.pg_get_expr(c.relpartbound, c.oid) as bound
        from pg_catalog.pg_inherits as i
        inner join pg_catalog.pg_class as c on c.oid = i.inhrelid
        where i.inhparent = 'jobctl._ready'::regclass
        order by bound
    ),
    array['FOR VALUES IN (''0'')', 'FOR VALUES IN (''1'')'],
    '_ready has the two slot partitions whose rows _take deletes slot by slot'
);

select * from finish();
rollback;
