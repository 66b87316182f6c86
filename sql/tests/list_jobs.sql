-- jobctl.list_jobs: a tenant's jobs newest first, keyset pagination by before_id, state and queue
-- filters, max_rows limits. Tenants tap_list_*, queues tap_list_*; every claim names its queue.
begin;
select plan(29);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function(
    'jobctl', 'list_jobs', array['text', 'text', 'text', 'bigint', 'integer'],
    'list_jobs(tenant_id, state, queue, before_id, max_rows) exists'
);
select function_returns(
    'jobctl', 'list_jobs', array['text', 'text', 'text', 'bigint', 'integer'], 'setof jobctl.job_info',
    'it returns setof jobctl.job_info'
);

-- tenant tap_list_t1: seven jobs, n = 1..7 in submit order (ids ascending), in two queues;
-- tenant tap_list_t2: two jobs in the same queue
create temp table s as
select
    r.job_id,
    r.ord as n
from jobctl.submit_jobs(
    (
        select
            jsonb_agg(
                jsonb_build_object(
                    'tenant_id', 'tap_list_t1', 'queue', case when g % 2 = 0 then 'tap_list_qb' else 'tap_list_qa' end,
                    'payload', jsonb_build_object('n', g), 'priority', g
                )
                order by g
            )
        from generate_series(1, 7) as g
    )
) with ordinality as r (job_id, duplicate, ord);
create temp table s2 as
select * from jobctl.submit_job('tap_list_t2', 'tap_list_qa2', '{}')
union all
select * from jobctl.submit_job('tap_list_t2', 'tap_list_qa2', '{}');

-- the job id of job n of tap_list_t1
create function pg_temp.id(p_n integer) returns bigint
language sql as $$
    select job_id from s where n = p_n
$$;

-- states: 7 running, 6 completed, 5 failed, 4 cancelled; the rest pending
create temp table c as
select * from jobctl.claim_job('tap_list_w', array['tap_list_qa'], 1);
select is((select (payload ->> 'n')::integer from c), 7, 'the highest priority (n = 7) is claimed');
create temp table c6 as
select * from jobctl.claim_job('tap_list_w', array['tap_list_qb'], 1);
select ok((select jobctl.complete_job(job_id, lease_epoch) from c6), 'n = 6 completes');
create temp table c5 as
select * from jobctl.claim_job('tap_list_w', array['tap_list_qa'], 1);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c5), 'failed', 'n = 5 fails');
select is(jobctl.cancel_job(pg_temp.id(4)), 'cancelled', 'n = 4 is cancelled');

-- the n of each listed job, in list order
create function pg_temp.ns(
    p_state text default null, p_queue text default null, p_before bigint default null, p_max integer default 100
) returns integer[]
language sql as $$
    select coalesce(array_agg(s.n::integer order by l.ordinality), '{}')
    from jobctl.list_jobs('tap_list_t1', p_state, p_queue, p_before, p_max) with ordinality as l
    inner join s on l.job_id = s.job_id
$$;

select is(pg_temp.ns(), array[7, 6, 5, 4, 3, 2, 1], 'every job of the tenant, job_id descending');
select is(
    (select count(*) from jobctl.list_jobs('tap_list_t1')), 7::bigint, 'and none of another tenant''s'
);
select is(
    (select array_agg(l.job_id order by l.job_id desc) from jobctl.list_jobs('tap_list_t2') as l),
    (select array_agg(s2.job_id order by s2.job_id desc) from s2),
    'the other tenant sees its own two jobs'
);
select is_empty($$select * from jobctl.list_jobs('tap_list_nobody')$$, 'an unknown tenant: no rows');

-- keyset pagination
select is(pg_temp.ns(p_max => 3), array[7, 6, 5], 'page 1 (max_rows 3)');
select is(pg_temp.ns(p_before => pg_temp.id(5), p_max => 3), array[4, 3, 2], 'page 2: before_id = n 5');
select is(pg_temp.ns(p_before => pg_temp.id(2), p_max => 3), array[1], 'page 3: the last one');
select is(
    pg_temp.ns(p_before => pg_temp.id(1), p_max => 3), '{}'::integer[],
    'before the oldest: nothing'
);

-- filters
select is(pg_temp.ns(p_state => 'pending'), array[3, 2, 1], 'state pending');
select is(pg_temp.ns(p_state => 'running'), array[7], 'state running');
select is(pg_temp.ns(p_state => 'completed'), array[6], 'state completed');
select is(pg_temp.ns(p_state => 'failed'), array[5], 'state failed');
select is(pg_temp.ns(p_state => 'cancelled'), array[4], 'state cancelled');
select is(pg_temp.ns(p_queue => 'tap_list_qb'), array[6, 4, 2], 'queue qb');
select is(
    pg_temp.ns(p_state => 'pending', p_queue => 'tap_list_qa', p_before => pg_temp.id(3)),
    array[1],
    'state, queue and before_id together'
);
select results_eq(
    $$select l.worker_id, l.lease_epoch, l.lease_expires_at from jobctl.list_jobs('tap_list_t1', 'running') as l$$,
    $$select 'tap_list_w', lease_epoch, lease_expires_at from c$$,
    'a running job is listed with its lease'
);

-- argument errors
select throws_ok(
    $$select jobctl.list_jobs(null)$$, 'JC001', 'tenant_id must not be NULL', 'NULL tenant_id: JC001'
);
select throws_ok(
    $$select jobctl.list_jobs('tap_list_t1', 'sleeping')$$,
    'JC001', 'state must be one of waiting, pending, running, completed, failed, dead, cancelled, not sleeping',
    'an unknown state: JC001'
);
select throws_ok(
    $$select jobctl.list_jobs('tap_list_t1', max_rows => 0)$$, 'JC001', 'max_rows must be at least 1, not 0',
    'max_rows 0: JC001'
);
select lives_ok(
    $$select jobctl.list_jobs('tap_list_t1', max_rows => 5000)$$,
    'max_rows above 1,000 is capped, not an error'
);
select throws_ok(
    $$select jobctl.list_jobs('tap_list_t1', max_rows => null)$$, 'JC001', 'max_rows must be at least 1, not NULL',
    'max_rows NULL: JC001'
);
select is(pg_temp.ns(p_max => 1000), array[7, 6, 5, 4, 3, 2, 1], 'max_rows 1000 is accepted');

select isnt(
    obj_description('jobctl.list_jobs(text, text, text, bigint, integer)'::regprocedure), null, 'list_jobs has a comment'
);

select * from finish();
rollback;
