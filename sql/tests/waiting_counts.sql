-- Jobs waiting for their parents are counted. job_overview's last column,
-- waiting (as job_counts' and stats'), and count_job_states: the jobs a filter names by the
-- counters' gauges (the dashboard's chips for a filter of job ids). Tenants tap_wc_*.
begin;
select plan(9);
set local jit = off;
\ir helpers.psql

-- a delayed root, three children waiting for it, one due job, one waiting for the due one
create temp table wc as
select
    w.name,
    w.job_id
from jobctl.submit_workflow(jsonb_build_array(
    jsonb_build_object(
        'name', 'root', 'tenant_id', 'tap_wc_a', 'queue', 'tap_wc_q', 'payload', '{}'::jsonb,
        'run_at', now() + interval '1 hour'
    ),
    jsonb_build_object(
        'name', 'c1', 'tenant_id', 'tap_wc_a', 'queue', 'tap_wc_q', 'payload', '{}'::jsonb,
        'depends_on', jsonb_build_array('root')
    ),
    jsonb_build_object(
        'name', 'c2', 'tenant_id', 'tap_wc_a', 'queue', 'tap_wc_q', 'payload', '{}'::jsonb,
        'depends_on', jsonb_build_array('root')
    ),
    jsonb_build_object(
        'name', 'c3', 'tenant_id', 'tap_wc_a', 'queue', 'tap_wc_q', 'payload', '{}'::jsonb,
        'depends_on', jsonb_build_array('root')
    ),
    jsonb_build_object('name', 'due', 'tenant_id', 'tap_wc_a', 'queue', 'tap_wc_q', 'payload', '{}'::jsonb),
    jsonb_build_object(
        'name', 'd1', 'tenant_id', 'tap_wc_a', 'queue', 'tap_wc_r', 'payload', '{}'::jsonb,
        'depends_on', jsonb_build_array('due')
    )
)) as w;
create function pg_temp.wc(p_name text) returns bigint
language sql as $$ select job_id from wc where name = p_name $$;

select results_eq(
    $$select queue, pending, delayed, waiting from jobctl.job_overview(tenant_id => 'tap_wc_a') order by queue$$,
    $$values ('tap_wc_q', 1::bigint, 1::bigint, 3::bigint), ('tap_wc_r', 0::bigint, 0::bigint, 1::bigint)$$,
    'job_overview: the waiting jobs in a column of their own, not as pending or delayed'
);
select results_eq(
    $$select queue, state, jobs from jobctl.stats('tap_wc_a') where state = 'waiting' order by queue$$,
    $$values ('tap_wc_q', 'waiting', 3::bigint), ('tap_wc_r', 'waiting', 1::bigint)$$,
    'stats: a waiting row per queue'
);
select results_eq(
    $$select sum(waiting)::bigint from jobctl.job_counts('tap_wc_a')$$, $$values (4::bigint)$$,
    'job_counts: 4 waiting'
);

-- count_job_states: by job id, as the counters' gauges
select results_eq(
    $$select pending, delayed, retrying, running, dead, completed, cancelled, waiting, capped
      from jobctl.count_job_states(jsonb_build_object(
          'job_ids', array[pg_temp.wc('root'), pg_temp.wc('c1'), pg_temp.wc('due')]
      ))$$,
    $$values (1::bigint, 1::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 1::bigint, false)$$,
    'count_job_states by id: the root delayed, c1 waiting, the due one pending'
);
select results_eq(
    $$select pending, delayed, waiting, capped from jobctl.count_job_states('{"tenant_id": "tap_wc_a", "state": "pending"}')$$,
    $$values (1::bigint, 1::bigint, 4::bigint, false)$$,
    'by tenant: the whole tenant (the filter''s state is ignored: the counts are by state)'
);
select results_eq(
    $$select pending + delayed + waiting, capped from jobctl.count_job_states('{"tenant_id": "tap_wc_a"}', 2)$$,
    $$values (2::bigint, true)$$,
    'at most max_count jobs are read; capped says there are more'
);
select throws_ok(
    $$select * from jobctl.count_job_states('{"tenant_id": "tap_wc_a"}', 0)$$, 'JC001', null, 'max_count 0: JC001'
);
select throws_ok(
    $$select * from jobctl.count_job_states('{"nope": 1}')$$, 'JC001', null, 'an unknown key: JC001'
);

-- a token of another tenant counts none of them
select set_config('jobctl.api_token', (select jobctl.create_api_token('tap_wc_b', array['jobs:read'], 'tap')), true);
select results_eq(
    $$select pending + delayed + waiting
      from jobctl.count_job_states(jsonb_build_object('job_ids', array[pg_temp.wc('root'), pg_temp.wc('c1')]))$$,
    $$values (0::bigint)$$,
    'another tenant''s token counts none of its jobs'
);
select set_config('jobctl.api_token', '', true);

select * from finish();
rollback;
