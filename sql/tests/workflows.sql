-- Dependencies and batches: submit_workflow, depends_on on submit_job/submit_jobs, the waiting
-- state, release on the last parent's completion, the parent-failure policies, cancel of a waiting
-- job, parent_results, submit_batch and get_batch, the recheck of racing parents (one session
-- here; tests/test_workflows.py races real processes). Tenants tap_wf_*, queues tap_wf_*.
begin;
select plan(72);
set local jit = off;
\ir helpers.psql

-- claim every due job of a queue and complete (or fail for good) each by id
create function pg_temp.run(p_queue text, p_outcome text default 'complete') returns integer
language plpgsql as $$
declare
    v record;
    v_n integer := 0;
begin
    for v in select * from jobctl.claim_job('tap_wf_w', array[p_queue], 100) loop
        if p_outcome = 'complete' then
            perform jobctl.complete_job(v.job_id, v.lease_epoch, jsonb_build_object('from', v.job_id));
        else
            perform jobctl.fail_job(v.job_id, v.lease_epoch, 'boom', false);
        end if;
        v_n := v_n + 1;
    end loop;
    return v_n;
end
$$;
create function pg_temp.state(p_job_id bigint) returns text
language sql as $$ select state from jobctl.job where job_id = p_job_id $$;
create function pg_temp.waits(p_job_id bigint) returns boolean
language sql as $$ select exists (select from jobctl._waiting where job_id = p_job_id) $$;

select has_function('jobctl', 'submit_workflow', array['jsonb', 'text'], 'submit_workflow(jobs, on_parent_failure) exists');
select
    has_function(
        'jobctl',
        'submit_batch',
        array['jsonb', 'jsonb', 'jsonb', 'jsonb'],
        'submit_batch(jobs, on_finish, on_success, on_discard) exists'
    );
select has_function('jobctl', 'parent_results', array['bigint'], 'parent_results(job_id) exists');
select has_function('jobctl', 'get_batch', array['bigint'], 'get_batch(batch_id) exists');

-- a diamond: a -> (b, c) -> d
create temp table wf as
select * from jobctl.submit_workflow('[
  {"name": "a", "tenant_id": "tap_wf_1", "queue": "tap_wf_q1", "payload": {"n": "a"}},
  {"name": "b", "tenant_id": "tap_wf_1", "queue": "tap_wf_q1", "payload": {"n": "b"}, "depends_on": ["a"]},
  {"name": "c", "tenant_id": "tap_wf_1", "queue": "tap_wf_q1", "payload": {"n": "c"}, "depends_on": ["a"]},
  {"name": "d", "tenant_id": "tap_wf_1", "queue": "tap_wf_q1", "payload": {"n": "d"}, "depends_on": ["b", "c"]}
]');
create function pg_temp.wf(p_name text) returns bigint
language sql as $$ select job_id from wf where name = p_name $$;

select is((select count(*) from wf), 4::bigint, 'submit_workflow returns a row per job');
select is(
    (select array_agg(name order by job_id) from wf), array['a', 'b', 'c', 'd'], 'in input order'
);
select is(
    (
        select count(*) from wf
        where workflow_id = pg_temp.wf('a')
    ), 4::bigint,
    'workflow_id is the first job''s id, on every row'
);
select is(
    (
        select array_agg(state order by job_id) from jobctl.job
        where workflow_id = pg_temp.wf('a')
    ),
    array['pending', 'waiting', 'waiting', 'waiting'], 'a job with parents is waiting, the root pending'
);
select is(
    (
        select depends_on from jobctl.job
        where job_id = pg_temp.wf('d')
    ), array[pg_temp.wf('b'), pg_temp.wf('c')
    ],
    'depends_on holds the parents'' ids, in the order named'
);
select is(pg_temp.queued(pg_temp.wf('b')), 'nowhere', 'a waiting job is in no queue table');
select is((
    select count(*) from jobctl._edge
    where child_id = pg_temp.wf('d')
), 2::bigint, 'd has an edge to each parent');
select is(pg_temp.run('tap_wf_q1'), 1, 'only the root is claimed');
select is(
    (
        select array_agg(state order by job_id) from jobctl.job
        where workflow_id = pg_temp.wf('a')
    ),
    array['completed', 'pending', 'pending', 'waiting'], 'a''s completion released b and c'
);
select ok(
    (
        select run_at from jobctl.job
        where job_id = pg_temp.wf('b')
    )
    >= (
        select finished_at from jobctl.job
        where job_id = pg_temp.wf('a')
    ),
    'a released job is due from its release: run_at moved up'
);
select is(pg_temp.queued(pg_temp.wf('b')), 'ready', 'b is in _ready');
select is((
    select count(*) from jobctl._edge
    where parent_id = pg_temp.wf('a')
), 0::bigint, 'a''s edges are gone');
-- one parent of d completes: d waits on (and a recheck row stands for a possibly racing parent)
select is(
    (
        select count(*) from jobctl.claim_job('tap_wf_w', array['tap_wf_q1'], 1) as c
        where jobctl.complete_job(c.job_id, c.lease_epoch, '{"half": true}')
    ),
    1::bigint, 'one of b, c completes'
);
select is(pg_temp.state(pg_temp.wf('d')), 'waiting', 'd waits for its other parent');
select ok(not exists (
    select from jobctl._recheck
    where child_id = pg_temp.wf('d')
), 'no recheck row: d''s other edge is untouched, its parent''s end will look');
insert into jobctl._recheck (child_id) values (pg_temp.wf('d'));
select is(jobctl._recheck_waiting(), 0, 'a recheck releases nothing while an edge is left');
select ok(not exists (
    select from jobctl._recheck
    where child_id = pg_temp.wf('d')
), 'and takes the recheck row');
select is(pg_temp.run('tap_wf_q1'), 1, 'the other completes');
select is(pg_temp.state(pg_temp.wf('d')), 'pending', 'd is pending after its last parent');
select is(
    jobctl.parent_results(pg_temp.wf('d')),
    jsonb_build_object(
        pg_temp.wf(
            'b')::text, (
            select result from jobctl.job
            where job_id = pg_temp.wf('b')
        ),
        pg_temp.wf(
            'c')::text, (
            select result from jobctl.job
            where job_id = pg_temp.wf('c')
        )
    ),
    'parent_results: {parent id: result}'
);
select is(
    (select g.parent_results from jobctl.get_job(pg_temp.wf('d')) as g), jobctl.parent_results(pg_temp.wf('d')),
    'get_job shows the parents'' results'
);
select is(
    (select g.depends_on from jobctl.get_job(pg_temp.wf('d')) as g), array[pg_temp.wf('b'), pg_temp.wf('c')],
    'get_job shows depends_on'
);
select is(jobctl.parent_results(pg_temp.wf('a')), null, 'parent_results of a root: NULL');
select is(pg_temp.run('tap_wf_q1'), 1, 'd runs');

-- depends_on on submit_job: an existing job; completed parents need no edge
select is(
    pg_temp.state((select job_id from jobctl.submit_job('tap_wf_1', 'tap_wf_q1', '{}', depends_on => array[pg_temp.wf('a')]))),
    'pending', 'depending only on completed jobs: pending at once'
);
select is(pg_temp.run('tap_wf_q1'), 1, 'and claimable');
create temp table p1 as select job_id from jobctl.submit_job('tap_wf_1', 'tap_wf_q2', '{}');
create temp table c1 as
select job_id
from jobctl.submit_job('tap_wf_1', 'tap_wf_q3', '{}', depends_on => array[(select job_id from p1)]);
select is(pg_temp.state((select job_id from c1)), 'waiting', 'submit_job with a pending parent: waiting');
select is(pg_temp.run('tap_wf_q2'), 1, 'the parent runs');
select is(pg_temp.state((select job_id from c1)), 'pending', 'and releases the child');
select throws_ok(
    $$select jobctl.submit_job('tap_wf_1', 'tap_wf_q3', '{}', depends_on => array[-5::bigint])$$,
    'JC001', null, 'an unknown parent: JC001'
);
select throws_ok(
    format(
        'select jobctl.submit_job(%L, %L, %L, depends_on => array[%s::bigint])', 'tap_wf_2', 'tap_wf_q3', '{}', pg_temp.wf('a')
    ),
    'JC001', format('depends_on: job %s is not a job of tenant tap_wf_2', pg_temp.wf('a')),
    'another tenant''s job as a parent: JC001, as an unknown one'
);
select is(pg_temp.n_jobs('tap_wf_2'), 0::bigint, 'nothing was submitted');
select throws_ok(
    $$select jobctl.submit_job('tap_wf_1', 'tap_wf_q3', '{}', depends_on => array[1::bigint], on_parent_failure => 'maybe')$$,
    'JC001', 'on_parent_failure must be cancel or wait, not maybe', 'a bad policy names the field'
);
select throws_ok(
    $$select jobctl.submit_workflow('[{"name": "x", "tenant_id": "tap_wf_2", "queue": "q", "payload": {}, "depends_on": ["y"]},
                                     {"name": "y", "tenant_id": "tap_wf_2", "queue": "q", "payload": {}}]')$$,
    'JC001',
    'jobs[0].depends_on names "y", which is not a job listed before it',
    'a name not listed before: JC001 (no cycle can be written)'
);
select throws_ok(
    $$select jobctl.submit_workflow('[{"name": "x", "tenant_id": "tap_wf_2", "queue": "q", "payload": {}},
                                     {"name": "x", "tenant_id": "tap_wf_2", "queue": "q", "payload": {}}]')$$,
    'JC001', 'jobs[1].name is the name of an earlier job', 'a repeated name: JC001'
);
select throws_ok(
    $$select jobctl.submit_workflow('[]')$$,
    'JC001', 'jobs must hold 1 to 10000 jobs', 'an empty workflow: JC001'
);
select throws_ok(
    $$select jobctl.submit_workflow('[{"tenant_id": "tap_wf_2", "queue": "q", "payload": {}}]')$$,
    'JC001', 'jobs[0].name must be a string of 1 to 200 printable characters', 'a missing name: JC001'
);
select throws_ok(
    $$select jobctl.submit_workflow('[{"name": "x", "tenant_id": "tap_wf_2", "queue": "q", "payload": {}, "dedup_key": "k"},
                                     {"name": "y", "tenant_id": "tap_wf_2", "queue": "q", "payload": {}, "depends_on": ["x"]}]')$$,
    'JC001', 'jobs[0].dedup_key cannot be used in a call whose jobs depend on each other (a workflow)',
    'dedup_key in a linked workflow: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_wf_2", "queue": "q", "payload": {}, "depends_on": ["x"]}]')$$,
    'JC001', 'jobs[0].depends_on must be an array of at most 10000 job ids', 'submit_jobs: depends_on takes ids only'
);
select is(pg_temp.n_jobs('tap_wf_2'), 0::bigint, 'no bad workflow wrote anything');

-- policies: a dead parent cancels (cancel) or keeps waiting (wait) its dependents, downstream too
create temp table wf2 as
select * from jobctl.submit_workflow('[
  {"name": "p", "tenant_id": "tap_wf_3", "queue": "tap_wf_q4", "payload": {}},
  {"name": "c", "tenant_id": "tap_wf_3", "queue": "tap_wf_q5", "payload": {}, "depends_on": ["p"]},
  {"name": "g", "tenant_id": "tap_wf_3", "queue": "tap_wf_q5", "payload": {}, "depends_on": ["c"]},
  {"name": "w", "tenant_id": "tap_wf_3", "queue": "tap_wf_q5", "payload": {}, "depends_on": ["p"], "on_parent_failure": "wait"}
]');
select is(pg_temp.run('tap_wf_q4', 'die'), 1, 'the parent dies');
select
    is(
        (select array_agg(j.state order by j.job_id) from jobctl.job as j inner join wf2 on j.job_id = wf2.job_id
        ),
        array['dead', 'cancelled', 'cancelled', 'waiting'], 'cancel: the child and its child are cancelled; wait: waits on'
    );
select is(
    (
        select last_error from jobctl.job
        where job_id = (
            select wf2.job_id from wf2
            where wf2.name = 'c'
        )
    ),
    'cancelled: a job it depends on was dead or cancelled', 'the cancelled child says why'
);
select is(
    (
        select count(*) from jobctl._edge
        where child_id in (
            select wf2.job_id from wf2
            where wf2.name in ('c', 'g')
        )
    ),
    0::bigint, 'the cancelled children have no edges left'
);
select ok(
    exists (
        select from jobctl._edge
        where child_id = (
            select wf2.job_id from wf2
            where wf2.name = 'w'
        )
    ),
    'the waiting one keeps its edge to the dead parent'
);
select lives_ok(format('select jobctl.retry_job(%s)', (
    select wf2.job_id from wf2
    where wf2.name = 'p'
)), 'the dead parent is retried');
select is(pg_temp.run('tap_wf_q4'), 1, 'and completes');
select is(pg_temp.state((
    select wf2.job_id from wf2
    where wf2.name = 'w'
)), 'pending', 'which releases the waiting child');
-- depending on a dead job at submit: cancelled at once (cancel), waiting (wait)
select is(
    pg_temp.state(
        (select job_id from jobctl.submit_job('tap_wf_3', 'tap_wf_q5', '{}', depends_on => array[(
            select wf2.job_id from wf2
            where wf2.name = 'c'
        )]))
    ),
    'cancelled', 'a new child of a cancelled job is cancelled at once (cancel)'
);
select is(
    pg_temp.state(
        (select job_id from jobctl.submit_job('tap_wf_3', 'tap_wf_q5', '{}', depends_on => array[(
            select wf2.job_id from wf2
            where wf2.name = 'c'
        )], on_parent_failure => 'wait'))
    ),
    'waiting', 'and waits under wait'
);

-- cancel_job of a waiting job, and of a parent
create temp table wf3 as
select * from jobctl.submit_workflow('[
  {"name": "p", "tenant_id": "tap_wf_4", "queue": "tap_wf_q6", "payload": {}},
  {"name": "c", "tenant_id": "tap_wf_4", "queue": "tap_wf_q6", "payload": {}, "depends_on": ["p"]}
]');
select is(jobctl.cancel_job((
    select wf3.job_id from wf3
    where wf3.name = 'c'
)), 'cancelled', 'a waiting job can be cancelled');
select is(pg_temp.waits((
    select wf3.job_id from wf3
    where wf3.name = 'c'
)), false, 'its _waiting row is gone');
select is(
    (
        select count(*) from jobctl._edge
        where child_id = (
            select wf3.job_id from wf3
            where wf3.name = 'c'
        )
    ), 0::bigint,
    'and its edges'
);
select throws_ok(
    format(
        'select jobctl.retry_job(%s)', (select job_id from jobctl.submit_job('tap_wf_4', 'tap_wf_q6', '{}', depends_on => array[(
            select wf3.job_id from wf3
            where wf3.name = 'p'
        )]))
    ),
    'JC010', null, 'retry_job of a waiting job: JC010'
);
select is(
    (select c.jobs from jobctl.count_jobs('{"tenant_id": "tap_wf_4", "state": "waiting"}', 'cancel') as c),
    1::bigint, 'count_jobs: a waiting job is one a bulk cancel takes'
);
select is(
    (select c.acted from jobctl.cancel_jobs('{"tenant_id": "tap_wf_4", "state": "waiting"}') as c),
    1, 'cancel_jobs cancels it'
);
select is(
    (select count(*) from jobctl.list_jobs('tap_wf_4', state => 'waiting')), 0::bigint,
    'list_jobs: none is waiting any more'
);

-- batches: on_finish fires once with the counts; on_success skipped when a member was discarded
create temp table b1 as
select * from jobctl.submit_batch(
    '[{"tenant_id": "tap_wf_5", "queue": "tap_wf_q7", "payload": {"i": 1}},
      {"tenant_id": "tap_wf_5", "queue": "tap_wf_q7", "payload": {"i": 2}},
      {"tenant_id": "tap_wf_5", "queue": "tap_wf_q8", "payload": {"i": 3}}]',
    on_finish => '{"queue": "tap_wf_q9", "payload": {"cb": "finish"}}',
    on_success => '{"queue": "tap_wf_q9", "payload": {"cb": "success"}}',
    on_discard => '{"queue": "tap_wf_q9", "payload": {"cb": "discard"}}'
);
select is(cardinality((select job_ids from b1)), 3, 'submit_batch returns the members'' ids');
select is(
    (
        select array_agg(state order by job_id) from jobctl.job
        where job_id in (
            select b1.on_finish_id from b1
            union all
            select b1.on_success_id from b1
            union all
            select b1.on_discard_id from b1
        )
    ),
    array['waiting', 'waiting', 'waiting'], 'the callbacks wait'
);
select is(pg_temp.run('tap_wf_q7'), 2, 'two members complete');
select is(
    (select counts from jobctl.get_batch((select batch_id from b1))), '{"pending": 1, "completed": 2}'::jsonb,
    'get_batch while it runs: the members by state'
);
select is(pg_temp.state((select on_finish_id from b1)), 'waiting', 'on_finish waits for the last member');
select is(pg_temp.run('tap_wf_q8', 'die'), 1, 'the last member dies');
select is(
    (select counts from jobctl.get_batch((select batch_id from b1))), '{"dead": 1, "completed": 2, "cancelled": 0}'::jsonb,
    'the batch ended with the counts by outcome'
);
select is(
    (
        select array_agg(state order by job_id) from jobctl.job
        where job_id in (
            select b1.on_finish_id from b1
            union all
            select b1.on_success_id from b1
            union all
            select b1.on_discard_id from b1
        )
    ),
    array['pending', 'cancelled', 'pending'], 'on_finish and on_discard fire, on_success does not'
);
select throws_ok(
    $$select jobctl.submit_batch('[{"tenant_id": "tap_wf_5", "queue": "q", "payload": {}}]')$$,
    'JC001', 'a batch needs a callback: on_finish, on_success or on_discard', 'a batch without a callback: JC001'
);

-- the counters count every move above: waiting is a gauge of its own
select is_empty(
    $$select * from jobctl.recount_counters() where tenant_id like 'tap_wf%'$$,
    'the counters agree with the jobs (recount_counters)'
);
select is(
    (
        select s.jobs from jobctl.stats('tap_wf_3') as s
        where s.state = 'waiting'
    ), 1::bigint,
    'stats counts the waiting job of tap_wf_3'
);

select * from finish();
rollback;
