-- jobctl.count_jobs, retry_jobs and cancel_jobs: the bulk filter (every key, and each bound at and
-- one past it), batches and their cursor, tenant isolation, quota and rate mid-batch, audit entries.
-- Tenants tap_bulk_*, queues tap_bulk_*; every claim names its queue.
begin;
select plan(99);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'count_jobs', array['jsonb', 'text', 'integer'], 'count_jobs(filter, action, max_count) exists');
select has_function('jobctl', 'retry_jobs', array['jsonb', 'integer', 'bigint'], 'retry_jobs(filter, max_jobs, after_id) exists');
select has_function(
    'jobctl', 'cancel_jobs', array['jsonb', 'integer', 'bigint'], 'cancel_jobs(filter, max_jobs, after_id) exists'
);
select is_empty(
    $$select p.proname from pg_catalog.pg_proc as p
      where p.pronamespace = 'jobctl'::regnamespace and p.proname in ('count_jobs', 'retry_jobs', 'cancel_jobs')
        and obj_description(p.oid, 'pg_proc') !~ 'Errors: JC001.*Example:'$$,
    'each has a comment with Errors and Example'
);

-- how many jobs count_jobs finds for a filter (fewer than its cap)
create function pg_temp.n(p_filter jsonb, p_action text default null) returns bigint
language sql as $$
    select c.jobs from jobctl.count_jobs(p_filter, p_action) as c
$$;

-- ---------------------------------------------------------------------------------------------
-- validation: JC001 naming the field; a value at its bound passes
select throws_ok($$select jobctl.count_jobs(null)$$, 'JC001', 'filter must be a JSON object, not NULL', 'a NULL filter');
select throws_ok($$select jobctl.retry_jobs('[]')$$, 'JC001', 'filter must be a JSON object, not array', 'an array filter');
select is(
    pg_temp.error_of($$select jobctl.cancel_jobs('{"tenant": "x"}')$$),
    'JC001: filter has an unknown key tenant (field: filter.tenant)', 'an unknown key, named in DETAIL'
);
select throws_ok(
    $$select jobctl.count_jobs('{"tenant_id": 7}')$$, 'JC001', 'filter.tenant_id must be a string of 1 to 200 characters',
    'a tenant_id that is not a string'
);
select throws_ok(
    $$select jobctl.count_jobs('{"queue": ""}')$$, 'JC001', 'filter.queue must be a string of 1 to 200 characters',
    'an empty queue'
);
select lives_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('queue', repeat('q', 200))), 'a queue of 200 characters'
);
select is(
    pg_temp.error_of(format('select jobctl.count_jobs(%L)', jsonb_build_object('queue', repeat('q', 201)))),
    'JC001: filter.queue must be a string of 1 to 200 characters (field: filter.queue)', 'a queue of 201'
);
select lives_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('tenant_id', repeat('t', 200))), 'a tenant_id of 200 characters'
);
select throws_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('tenant_id', repeat('t', 201))), 'JC001', null, 'a tenant_id of 201'
);
select lives_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('concurrency_key', repeat('k', 200))), 'a concurrency_key of 200'
);
select throws_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('concurrency_key', repeat('k', 201))), 'JC001',
    'filter.concurrency_key must be a string of 1 to 200 characters', 'a concurrency_key of 201'
);
select lives_ok(format('select jobctl.count_jobs(%L)', jsonb_build_object('dedup_key', repeat('d', 500))), 'a dedup_key of 500');
select throws_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('dedup_key', repeat('d', 501))), 'JC001',
    'filter.dedup_key must be a string of 1 to 500 characters', 'a dedup_key of 501'
);
select lives_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('subject_key', repeat('s', 500))), 'a subject_key of 500'
);
select throws_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('subject_key', repeat('s', 501))), 'JC001',
    'filter.subject_key must be a string of 1 to 500 characters', 'a subject_key of 501'
);
select lives_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('error_contains', repeat('e', 200))), 'an error_contains of 200'
);
select throws_ok(
    format('select jobctl.count_jobs(%L)', jsonb_build_object('error_contains', repeat('e', 201))), 'JC001',
    'filter.error_contains must be a string of 1 to 200 characters', 'an error_contains of 201'
);
select throws_ok(
    $$select jobctl.count_jobs('{"state": "lost"}')$$, 'JC001',
    'filter.state must be one of pending, running, completed, failed, dead, cancelled, waiting, not lost', 'an unknown state'
);
select throws_ok(
    $$select jobctl.count_jobs('{"state": []}')$$, 'JC001', 'filter.state must be a state or a non-empty array of states',
    'an empty state array'
);
select throws_ok(
    $$select jobctl.count_jobs('{"state": ["dead", 1]}')$$, 'JC001',
    'filter.state must be a state or a non-empty array of states',
    'a state that is not a string'
);
select lives_ok(
    format(
        'select jobctl.count_jobs(%L)',
        jsonb_build_object('job_ids', (select jsonb_agg(g.g) from generate_series(1, 1000) as g (g)))
    ),
    '1000 job ids'
);
select throws_ok(
    format(
        'select jobctl.count_jobs(%L)',
        jsonb_build_object('job_ids', (select jsonb_agg(g.g) from generate_series(1, 1001) as g (g)))
    ),
    'JC001', 'filter.job_ids must be an array of 1 to 1000 positive integer job ids', '1001 job ids'
);
select throws_ok($$select jobctl.count_jobs('{"job_ids": []}')$$, 'JC001', null, 'no job ids');
select throws_ok($$select jobctl.count_jobs('{"job_ids": [0]}')$$, 'JC001', null, 'job id 0');
select throws_ok($$select jobctl.count_jobs('{"job_ids": [1.5]}')$$, 'JC001', null, 'a fractional job id');
select throws_ok($$select jobctl.count_jobs('{"job_ids": ["1"]}')$$, 'JC001', null, 'a job id as a string');
select lives_ok($$select jobctl.count_jobs('{"job_ids": [9223372036854775807]}')$$, 'the largest bigint job id');
select throws_ok(
    $$select jobctl.count_jobs('{"job_ids": [9223372036854775808]}')$$, 'JC001', null, 'one past the largest bigint'
);
select is(
    pg_temp.error_of($$select jobctl.count_jobs('{"created_after": "yesterday-ish"}')$$),
    'JC001: filter.created_after must be an ISO 8601 timestamp such as 2026-12-01T09:30:00Z, not "yesterday-ish" '
    || '(field: filter.created_after)',
    'a time that does not parse'
);
select throws_ok($$select jobctl.count_jobs('{"finished_before": 5}')$$, 'JC001', null, 'a time that is a number');
select throws_ok(
    $$select jobctl.count_jobs('{"created_after": "2026-01-02T00:00:00Z", "created_before": "2026-01-02T00:00:00Z"}')$$,
    'JC001', 'filter.created_before must be later than filter.created_after', 'an empty created range'
);
select throws_ok(
    $$select jobctl.count_jobs('{"finished_after": "2026-01-03T00:00:00Z", "finished_before": "2026-01-02T00:00:00Z"}')$$,
    'JC001', 'filter.finished_before must be later than filter.finished_after', 'a reversed finished range'
);
select lives_ok($$select jobctl.count_jobs('{"queue": null, "state": null}')$$, 'a JSON null is an absent key');
select throws_ok(
    $$select jobctl.count_jobs('{}', 'purge')$$,
    'JC001',
    'action must be retry, cancel, delete or NULL, not purge',
    'a bad action'
);
select throws_ok(
    $$select jobctl.count_jobs('{}', max_count => 0)$$, 'JC001', 'max_count must be between 1 and 100000, not 0', 'max_count 0'
);
select throws_ok($$select jobctl.count_jobs('{}', max_count => 100001)$$, 'JC001', null, 'max_count 100001');
select throws_ok(
    $$select jobctl.retry_jobs('{}', max_jobs => 0)$$, 'JC001', 'max_jobs must be between 1 and 1000, not 0', 'max_jobs 0'
);
select throws_ok($$select jobctl.cancel_jobs('{}', max_jobs => 1001)$$, 'JC001', null, 'max_jobs 1001');
select throws_ok($$select jobctl.cancel_jobs('{}', max_jobs => null)$$, 'JC001', null, 'max_jobs NULL');
select throws_ok(
    $$select jobctl.retry_jobs('{}', after_id => -1)$$, 'JC001', 'after_id must be NULL or at least 0, not -1', 'after_id -1'
);

-- ---------------------------------------------------------------------------------------------
-- every filter key, counted; tenant a: j1 pending keyed, j2 pending, j3 dead, j4 failed; tenant b: j5
create temp table j (n integer, job_id bigint);
insert into j select
    1 as n,
    s.job_id
from jobctl.submit_job(
    'tap_bulk_a', 'tap_bulk_q1', '{}', dedup_key => 'tap-d1', subject_key => 'tap-s1', concurrency_key => 'tap-k1'
) as s;
insert into j select
    2 as n,
    s.job_id
from jobctl.submit_job('tap_bulk_a', 'tap_bulk_q2', '{}') as s;
insert into j select
    3 as n,
    s.job_id
from jobctl.submit_job('tap_bulk_a', 'tap_bulk_q3', '{}', max_attempts => 1) as s;
insert into j select
    4 as n,
    s.job_id
from jobctl.submit_job('tap_bulk_a', 'tap_bulk_q4', '{}', max_attempts => 5) as s;
insert into j select
    5 as n,
    s.job_id
from jobctl.submit_job('tap_bulk_b', 'tap_bulk_q1', '{}') as s;
create function pg_temp.id(p_n integer) returns bigint language sql as $$ select job_id from j where n = p_n $$;
select jobctl.fail_job(c.job_id, c.lease_epoch, 'Upstream TIMEOUT after 30 s')
from jobctl.claim_job('tap_bulk_w', array['tap_bulk_q3']) as c;
select jobctl.fail_job(c.job_id, c.lease_epoch, 'boom')
from jobctl.claim_job('tap_bulk_w', array['tap_bulk_q4']) as c;
select results_eq(
    $$select j.state from generate_series(1, 5) as g cross join pg_temp.job(pg_temp.id(g)) as j order by g$$,
    $$values ('pending'), ('pending'), ('dead'), ('failed'), ('pending')$$, 'the jobs are set up'
);
select results_eq(
    $$select array[
        pg_temp.n('{"tenant_id": "tap_bulk_a"}'),
        pg_temp.n('{"queue": "tap_bulk_q1"}'),
        pg_temp.n('{"tenant_id": "tap_bulk_a", "queue": "tap_bulk_q1"}'),
        pg_temp.n('{"tenant_id": "tap_bulk_a", "state": "dead"}'),
        pg_temp.n('{"tenant_id": "tap_bulk_a", "state": ["dead", "failed", "dead"]}'),
        pg_temp.n(jsonb_build_object('job_ids', jsonb_build_array(pg_temp.id(1), pg_temp.id(2), pg_temp.id(5)))),
        pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'job_ids', jsonb_build_array(pg_temp.id(1), pg_temp.id(5)))),
        pg_temp.n('{"dedup_key": "tap-d1"}'),
        pg_temp.n('{"subject_key": "tap-s1"}'),
        pg_temp.n('{"concurrency_key": "tap-k1"}'),
        pg_temp.n('{"tenant_id": "tap_bulk_a", "error_contains": "timeout"}'),
        pg_temp.n('{"tenant_id": "tap_bulk_a", "error_contains": "BOOM"}')
    ]$$,
    $$values (array[4, 2, 1, 1, 2, 3, 1, 1, 1, 1, 1, 1]::bigint[])$$,
    'tenant_id, queue, state (one or several), job_ids, dedup_key, subject_key, concurrency_key, error_contains'
);
select results_eq(
    format(
        $$select array[
            pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'created_after', %1$L::timestamptz - interval '1 minute')),
            pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'created_after', %1$L::timestamptz)),
            pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'created_before', %1$L::timestamptz + interval '1 minute')),
            pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'created_before', %1$L::timestamptz)),
            pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'finished_after', %1$L::timestamptz)),
            pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'finished_before', %1$L::timestamptz)),
            pg_temp.n(jsonb_build_object('tenant_id', 'tap_bulk_a', 'finished_before', clock_timestamp() + interval '1 minute'))
        ]$$,
        now()
    ),
    $$values (array[4, 0, 4, 0, 1, 0, 1]::bigint[])$$,
    'created_after/before and finished_after/before, exclusive (the jobs were made at now(), the dead one finished after)'
);
select results_eq(
    $$select pg_temp.n('{"tenant_id": "tap_bulk_a"}', 'retry'), pg_temp.n('{"tenant_id": "tap_bulk_a"}', 'cancel')$$,
    $$values (2::bigint, 3::bigint)$$, 'action retry counts the failed and dead jobs, cancel the pending and failed ones'
);

-- retry_jobs and cancel_jobs act on each state as retry_job and cancel_job do
select results_eq(
    $$select acted, skipped, last_id = pg_temp.id(4), done, stopped from jobctl.retry_jobs('{"tenant_id": "tap_bulk_a"}')$$,
    $$values (2, 0, true, true, null::text)$$, 'retry_jobs retries the dead and the failed job of a, nothing else'
);
select results_eq(
    $$select h.event, h.detail from jobctl.job_history(pg_temp.id(3)) as h where h.event = 'retried'$$,
    $$values ('retried'::text, 'manual retry of a dead job'::text)$$, 'the history says so, as for retry_job'
);
select is(pg_temp.queued(pg_temp.id(4)), 'ready', 'the failed job left _delayed for _ready');
create temp table c1 as select * from jobctl.claim_job('tap_bulk_w', array['tap_bulk_q2']);
select results_eq(
    $$select acted, skipped, done from jobctl.cancel_jobs('{"tenant_id": "tap_bulk_a", "queue": "tap_bulk_q2"}')$$,
    $$values (1, 0, true)$$, 'cancel_jobs cancels a running job'
);
select is((select jobctl.heartbeat(job_id, lease_epoch) from c1), 'cancelled', 'its heartbeat answers cancelled');
select is((select jobctl.complete_job(job_id, lease_epoch) from c1), false, 'and its completion is fenced');
select results_eq(
    $$select acted, skipped from jobctl.cancel_jobs(
        jsonb_build_object('job_ids', jsonb_build_array(pg_temp.id(2), pg_temp.id(3))), after_id => 0)$$,
    $$values (1, 0)$$, 'a cancelled job is not looked at again; the pending one is cancelled'
);

-- ---------------------------------------------------------------------------------------------
-- tenant isolation: a login granted tenant a only (session_user is what counts)
create role tap_bulk_role;
grant jobctl_writer to tap_bulk_role;
grant select on j to tap_bulk_role;  -- the ids the role's calls name
-- the table made before the role acts: it has no TEMPORARY on the database (sql/grants.sql)
create temp table iso (counted bigint, cancelled text, other_tenant text, other_count text);
grant insert on iso to tap_bulk_role;
select jobctl.grant_tenant('tap_bulk_role', 'tap_bulk_a');
set local session authorization tap_bulk_role;
insert into iso
select
    (select c.jobs from jobctl.count_jobs(jsonb_build_object('job_ids', jsonb_build_array(pg_temp.id(1), pg_temp.id(5)))) as c)
        as counted,
    (select row(r.acted, r.skipped)::text from jobctl.cancel_jobs(jsonb_build_object('queue', 'tap_bulk_q1')) as r) as cancelled,
    pg_temp.error_of($$select jobctl.cancel_jobs('{"tenant_id": "tap_bulk_b"}')$$) as other_tenant,
    pg_temp.error_of($$select jobctl.count_jobs('{"tenant_id": "tap_bulk_b"}')$$) as other_count;
reset session authorization;
select results_eq(
    $$select counted, cancelled from iso$$, $$values (1::bigint, '(1,0)'::text)$$,
    'a role of tenant a counts and cancels only a''s job among a''s and b''s'
);
select is((select j.state from pg_temp.job(pg_temp.id(5)) as j), 'pending', 'b''s job is untouched');
select matches(
    (select other_tenant from iso), '^42501: filter.tenant_id: no jobs:cancel access to tenant tap_bulk_b', 'naming b: 42501'
);
select matches((select other_count from iso), '^42501: filter.tenant_id: no jobs:read access', 'count_jobs naming b: 42501');

-- ---------------------------------------------------------------------------------------------
-- batches and the cursor: 2,500 jobs, cancelled then retried in batches of 1,000, each once
create temp table loop_jobs as
select s.job_id from jobctl.submit_jobs(
    (
        select
            jsonb_agg(
                jsonb_build_object('tenant_id', 'tap_bulk_loop', 'queue', 'tap_bulk_lq', 'payload', jsonb_build_object('g', g.g))
            )
        from generate_series(1, 2500) as g (g)
    )
) as s;
create temp table calls (fn text, n integer, after_id bigint, acted integer, skipped integer, last_id bigint, done boolean);
do $$
declare
    v_fn text;
    v_after bigint;
    v_n integer;
    v_r record;
begin
    foreach v_fn in array array['cancel_jobs', 'retry_jobs'] loop
        v_after := null;
        v_n := 0;
        loop
            v_n := v_n + 1;
            execute format('select * from jobctl.%I(''{"tenant_id": "tap_bulk_loop"}'', 1000, $1)', v_fn) into v_r using v_after;
            insert into calls values (v_fn, v_n, v_after, v_r.acted, v_r.skipped, v_r.last_id, v_r.done);
            exit when v_r.done or v_n > 5;
            v_after := v_r.last_id;
        end loop;
    end loop;
end
$$;
select results_eq(
    $$select fn, n, acted, skipped, done from calls order by fn desc, n$$,
    $$values ('retry_jobs', 1, 1000, 0, false), ('retry_jobs', 2, 1000, 0, false), ('retry_jobs', 3, 500, 0, true),
        ('cancel_jobs', 1, 1000, 0, false), ('cancel_jobs', 2, 1000, 0, false), ('cancel_jobs', 3, 500, 0, true)$$,
    'three calls each: 1000, 1000, then 500 and done'
);
select results_eq(
    $$select last_id from calls where fn = 'retry_jobs' order by n$$,
    $$select job_id from (select job_id, row_number() over (order by job_id) as r from loop_jobs) as x
      where r in (1000, 2000, 2500) order by job_id$$,
    'last_id is the 1000th, 2000th and last id: the cursor'
);
select is(
    (
        select count(*) from loop_jobs as l cross join pg_temp.job(l.job_id) as j
        where j.state = 'pending'
    ),
    2500::bigint,
    'all 2,500 are pending again'
);
select results_eq(
    $$select count(*) filter (where e.event = 'cancelled'), count(*) filter (where e.event = 'retried'), count(distinct e.job_id)
      from jobctl._event as e where e.job_id in (select job_id from loop_jobs)$$,
    $$values (2500::bigint, 2500::bigint, 2500::bigint)$$,
    'each of the 2,500 was cancelled once and retried once'
);
select results_eq(
    $$select (a.detail ->> 'retried')::integer, (a.detail ->> 'last_id')::bigint, a.detail -> 'filter'
      from jobctl.audit_log as a where a.action = 'retry_jobs' and a.tenant_id = 'tap_bulk_loop' order by a.audit_id$$,
    $$select c.acted, c.last_id, '{"tenant_id": "tap_bulk_loop"}'::jsonb from calls as c where c.fn = 'retry_jobs' order by c.n$$,
    'one audit entry a call, with the filter and the count'
);
select is(
    (
        select count(*) from jobctl.audit_log
        where action = 'cancel_jobs' and tenant_id = 'tap_bulk_loop'
    ),
    3::bigint,
    'cancel_jobs: one audit entry a call too'
);
select results_eq(
    $$select c.jobs, c.capped from jobctl.count_jobs('{"tenant_id": "tap_bulk_loop"}', max_count => 1000) as c$$,
    $$values (1000::bigint, true)$$, 'count_jobs stops at max_count: at least 1000'
);
select results_eq(
    $$select c.jobs, c.capped from jobctl.count_jobs('{"tenant_id": "tap_bulk_loop"}', max_count => 2500) as c$$,
    $$values (2500::bigint, false)$$, 'and counts exactly below it'
);
select results_eq(
    $$select acted, skipped, last_id, done from jobctl.retry_jobs('{"tenant_id": "tap_bulk_loop"}', after_id => 0)$$,
    $$values (0, 0, 0::bigint, true)$$, 'nothing left to retry: done, the cursor where it was'
);

-- ---------------------------------------------------------------------------------------------
-- quota mid-batch: max_pending 3, one job pending, three cancelled: two are retried, then it stops
select jobctl.put_tenant('tap_bulk_quota', max_pending => 3);
create temp table q as
select (jobctl.submit_job('tap_bulk_quota', 'tap_bulk_qq', jsonb_build_object('g', g))).job_id from generate_series(1, 3) as g;
select jobctl.cancel_job(job_id) from q;
select jobctl.submit_job('tap_bulk_quota', 'tap_bulk_qq', '{}');
select results_eq(
    $$select acted, skipped, last_id, done, stopped, retry_after
      from jobctl.retry_jobs('{"tenant_id": "tap_bulk_quota", "state": "cancelled"}')$$,
    $$select 2, 0, (select job_id from q order by job_id offset 1 limit 1), false, 'JC004'::text, 1::numeric$$,
    'the batch stops before the job over max_pending: two retried, last_id the second, stopped JC004'
);
select results_eq(
    $$select j.state from q cross join pg_temp.job(q.job_id) as j order by q.job_id$$,
    $$values ('pending'), ('pending'), ('cancelled')$$, 'the third stays cancelled'
);
select is(
    (
        select detail ->> 'stopped' from jobctl.audit_log
        where action = 'retry_jobs' and tenant_id = 'tap_bulk_quota'
    ),
    'JC004',
    'the audit entry says it stopped'
);
select throws_ok(
    format(
        'select jobctl.retry_jobs(''{"tenant_id": "tap_bulk_quota"}'', after_id => %s)',
        (
            select q.job_id from q
            order by q.job_id limit 1 offset 1
        )
    ),
    'JC004', 'tenant tap_bulk_quota is over its max_pending (3 unfinished + 1 retried > 3)',
    'the next call, with nothing retried yet, raises JC004 as retry_job does'
);
select is(
    (
        select count(*) from jobctl.audit_log
        where action = 'retry_jobs' and tenant_id = 'tap_bulk_quota'
    ),
    1::bigint,
    'the refused call wrote no audit entry'
);
select is(
    (select j.state from pg_temp.job((select max(job_id) from q)) as j), 'cancelled', 'and retried nothing'
);
-- the submit rate: a bucket of 3 with 2 taken holds one retry
select jobctl.put_tenant('tap_bulk_rate', submit_rate => 0.001, submit_burst => 3);
create temp table r as
select (jobctl.submit_job('tap_bulk_rate', 'tap_bulk_rq', jsonb_build_object('g', g))).job_id from generate_series(1, 2) as g;
select jobctl.cancel_job(job_id) from r;
select results_eq(
    $$select acted, done, stopped, retry_after > 0 from jobctl.retry_jobs('{"tenant_id": "tap_bulk_rate"}')$$,
    $$values (1, false, 'JC005'::text, true)$$, 'over the submit rate mid-batch: one retried, stopped JC005 with retry_after'
);
select throws_ok(
    format('select jobctl.retry_jobs(''{"tenant_id": "tap_bulk_rate"}'', after_id => %s)', (select min(job_id) from r)),
    'JC005', 'tenant tap_bulk_rate is over its submit rate (0.001 a second)', 'and the next call raises JC005'
);

-- a filter over several tenants: a tenant without room is skipped, the others' jobs are retried
select jobctl.put_tenant('tap_bulk_full');
select jobctl.put_tenant('tap_bulk_room');
create temp table m as
select
    t.t,
    (jobctl.submit_job(t.t, 'tap_bulk_mq', jsonb_build_object('g', g.g))).job_id as job_id
from unnest(array['tap_bulk_full', 'tap_bulk_room']) as t (t), generate_series(1, 2) as g (g);
select jobctl.cancel_job(m.job_id) from m;
select jobctl.submit_job('tap_bulk_full', 'tap_bulk_mq', '{"fills": "max_pending"}');
select jobctl.put_tenant('tap_bulk_full', max_pending => 1);
select results_eq(
    $$select acted, skipped, done, stopped from jobctl.retry_jobs('{"queue": "tap_bulk_mq", "state": "cancelled"}')$$,
    $$values (2, 2, true, 'JC004'::text)$$,
    'several tenants: the full one''s two jobs skipped, the other''s two retried, done, stopped names the limit'
);
select results_eq(
    $$select j.tenant_id, j.state, count(*)::integer from jobctl.job as j where j.queue = 'tap_bulk_mq'
      group by 1, 2 order by 1, 2$$,
    $$values ('tap_bulk_full'::text, 'cancelled'::text, 2), ('tap_bulk_full', 'pending', 1), ('tap_bulk_room', 'pending', 2)$$,
    'and the full tenant''s jobs stay cancelled'
);

-- ---------------------------------------------------------------------------------------------
-- concurrency keys: a batch admits its keyed jobs' keys once, at its end; the
-- places given up and the jobs made due are admitted as a single cancel_job or retry_job admits them
select jobctl.put_tenant('tap_bulk_key');
select jobctl.put_concurrency_limit('tap_bulk_key', 'kk', 1);
select jobctl.submit_job('tap_bulk_key', 'tap_bulk_kq', jsonb_build_object('i', g), concurrency_key => 'kk')
from generate_series(1, 3) as g;
create temp table kq as
select
    j.job_id,
    (j.payload ->> 'i')::int as i
from jobctl.job as j
where j.tenant_id = 'tap_bulk_key';
create temp table kq_first_two as select array_agg(kq.job_id) as ids from kq
where kq.i <= 2;
select results_eq(
    $$select (select count(*) from jobctl._ready where tenant_id = 'tap_bulk_key'),
        (select count(*) from jobctl._held where tenant_id = 'tap_bulk_key')$$,
    $$values (1::bigint, 2::bigint)$$,
    'key kk at its limit of 1: one job due, two held'
);
select results_eq(
    format('select acted, skipped from jobctl.cancel_jobs(%L)', jsonb_build_object('job_ids', (select ids from kq_first_two))),
    $$values (2, 0)$$,
    'cancel_jobs cancels the due job and a held one'
);
select results_eq(
    $$select q.i from jobctl._ready as r join kq as q using (job_id) where r.tenant_id = 'tap_bulk_key'$$,
    $$values (3)$$,
    'the key''s place went to its next job at the batch''s end'
);
select results_eq(
    format('select acted, skipped from jobctl.retry_jobs(%L)', jsonb_build_object('job_ids', (select ids from kq_first_two))),
    $$values (2, 0)$$,
    'retry_jobs retries both'
);
select results_eq(
    $$select (select count(*) from jobctl._ready where tenant_id = 'tap_bulk_key'),
        (select count(*) from jobctl._held where tenant_id = 'tap_bulk_key')$$,
    $$values (1::bigint, 2::bigint)$$,
    'the retried jobs wait for the key, held: the limit holds'
);

-- ---------------------------------------------------------------------------------------------
-- nothing written on a refused call; a subject key is not kept in the audit entry
create temp table audit_before as select count(*) as n from jobctl.audit_log;
select throws_ok($$select jobctl.cancel_jobs('{"tenant_id": "tap_bulk_a", "bogus": 1}')$$, 'JC001', null, 'a bad filter');
select is((select count(*) from jobctl.audit_log), (select n from audit_before), 'a refused call writes no audit entry');
select is((select j.state from pg_temp.job(pg_temp.id(5)) as j), 'pending', 'nor changes a job');
select jobctl.cancel_jobs('{"subject_key": "tap-s1"}');
select is(
    (
        select a.detail -> 'filter' ->> 'subject_key' from jobctl.audit_log as a
        where a.action = 'cancel_jobs'
        order by a.audit_id desc limit 1
    ),
    '(given)', 'the audit entry says a subject key was given, not which'
);

-- ---------------------------------------------------------------------------------------------
-- delete_jobs: finished jobs only, with their history, counted out of the counters, audited
select jobctl.put_tenant('tap_bulk_del');
create temp table del as
select (jobctl.submit_job('tap_bulk_del', 'tap_bulk_dq', jsonb_build_object('g', g))).job_id from generate_series(1, 3) as g;
select jobctl.cancel_job(del.job_id) from del
where del.job_id < (select max(x.job_id) from del as x);
select is(
    (select c.jobs from jobctl.count_jobs('{"tenant_id": "tap_bulk_del"}', 'delete') as c), 2::bigint,
    'count_jobs with action delete counts the finished jobs'
);
select results_eq(
    $$select acted, skipped, done from jobctl.delete_jobs('{"tenant_id": "tap_bulk_del"}')$$,
    $$values (2, 0, true)$$, 'delete_jobs deletes the two cancelled jobs'
);
select results_eq(
    $$select j.job_id from jobctl.job as j where j.tenant_id = 'tap_bulk_del'$$,
    $$select max(job_id) from del$$, 'the pending job stays'
);
select is_empty(
    $$select from jobctl._event as e
      where e.job_id in (select job_id from del where job_id < (select max(x.job_id) from del as x))$$,
    'their history went with them'
);
select results_eq(
    $$select pending, cancelled from jobctl.job_counts('tap_bulk_del')$$, $$values (1::bigint, 0::bigint)$$,
    'the counters lose them'
);
select is(
    (
        select (a.detail ->> 'deleted')::integer from jobctl.audit_log as a
        where a.action = 'delete_jobs'
        order by a.audit_id desc limit 1
    ),
    2, 'one audit entry with the count'
);
select throws_ok(
    $$select jobctl.delete_jobs('{}', max_jobs => 1001)$$, 'JC001', 'max_jobs must be between 1 and 1000, not 1001',
    'max_jobs over its bound'
);

-- find_jobs: a page of the filter's jobs, newest first, keyset by job_id
select results_eq(
    $$select job_id from jobctl.find_jobs('{"tenant_id": "tap_bulk_room", "queue": "tap_bulk_mq"}')$$,
    $$select job_id from m where t = 'tap_bulk_room' order by job_id desc$$,
    'find_jobs lists the filter''s jobs newest first'
);
select results_eq(
    $$select job_id from jobctl.find_jobs('{"tenant_id": "tap_bulk_room", "queue": "tap_bulk_mq"}', max_rows => 1)$$,
    $$select max(job_id) from m where t = 'tap_bulk_room'$$,
    'max_rows bounds the page'
);
select results_eq(
    format(
        'select job_id from jobctl.find_jobs(''{"tenant_id": "tap_bulk_room", "queue": "tap_bulk_mq"}'', before_id => %s)',
        (
            select max(m.job_id) from m
            where m.t = 'tap_bulk_room'
        )
    ),
    $$select min(job_id) from m where t = 'tap_bulk_room'$$,
    'before_id gives the next page'
);
select results_eq(
    $$select state from jobctl.find_jobs('{"queue": "tap_bulk_mq", "state": ["cancelled"]}')$$,
    $$values ('cancelled'::text), ('cancelled')$$,
    'states and no tenant: every tenant the caller acts for'
);
select throws_ok(
    $$select * from jobctl.find_jobs('{}', max_rows => 1001)$$, 'JC001', 'max_rows must be between 1 and 1000, not 1001',
    'max_rows over its bound'
);

select * from finish();
rollback;
