-- Queues as objects: jobctl.put_queue, pause_queue, resume_queue, list_queues; a paused queue is
-- left out of the next claim, and its jobs are claimed again once it is resumed; only a caller
-- acting for every tenant may change or list queues. (A queue's limits under concurrent claimers:
-- tests/test_queues.py.) Queues tap_queue_*, tenant tap_queue_t.
begin;
select plan(22);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'put_queue', array['text', 'integer', 'numeric', 'integer', 'boolean'], 'put_queue exists');
select has_function('jobctl', 'pause_queue', array['text', 'boolean'], 'pause_queue exists');
select has_function('jobctl', 'resume_queue', array['text'], 'resume_queue exists');
select has_function('jobctl', 'list_queues', '{}'::text[], 'list_queues exists');
select
    isnt(
        obj_description('jobctl.put_queue(text, integer, numeric, integer, boolean)'::regprocedure),
        null,
        'put_queue has a comment'
    );

-- bounds
select throws_ok($$select jobctl.put_queue('')$$, 'JC001', 'queue is out of range', 'an empty queue');
select throws_ok($$select jobctl.put_queue(repeat('q', 201))$$, 'JC001', 'queue is out of range', 'a queue of 201 characters');
select lives_ok(
    $$select jobctl.put_queue(repeat('q', 200), max_running => 1000000, claim_rate => 1000000, claim_burst => 1000000)$$,
    'a queue of 200 characters, the largest limits'
);
select
    throws_ok(
        $$select jobctl.put_queue('tap_queue_x', max_running => -1)$$, 'JC001', 'max_running is out of range', 'max_running -1'
    );
select throws_ok(
    $$select jobctl.put_queue('tap_queue_x', claim_rate => 0)$$, 'JC001', 'claim_rate is out of range', 'claim_rate 0'
);
select
    throws_ok(
        $$select jobctl.put_queue('tap_queue_x', claim_burst => 5)$$,
        'JC001',
        'claim_burst is out of range',
        'a burst without a rate'
    );
select
    throws_ok(
        $$select jobctl.pause_queue('tap_queue_x', null)$$, 'JC001', 'paused must be true or false', 'pause_queue: NULL paused'
    );

-- pause: the next claim leaves the queue out; other queues go on; resume brings its jobs back
create temp table s as
select
    q.q,
    x.job_id
from unnest(array['tap_queue_a', 'tap_queue_b']) as q (q)
cross join lateral jobctl.submit_job('tap_queue_t', q.q, '{}') as x;
select is(jobctl.pause_queue('tap_queue_a'), true, 'pause_queue: the state changed');
select is(jobctl.pause_queue('tap_queue_a'), false, 'a second pause changes nothing');
select results_eq(
    $$select job_id from jobctl.claim_job('tap_queue_w', array['tap_queue_a', 'tap_queue_b'], 10)$$,
    $$select job_id from s where q = 'tap_queue_b'$$,
    'the next claim takes only the other queue''s job'
);
select is(pg_temp.queued((
    select job_id from s
    where q = 'tap_queue_a'
)), 'ready', 'the paused queue''s job waits');
select lives_ok($$select jobctl.submit_job('tap_queue_t', 'tap_queue_a', '{}')$$, 'submits to a paused queue go on');
select is(jobctl.resume_queue('tap_queue_a'), true, 'resume_queue: the state changed');
select is(
    (select count(*)::integer from jobctl.claim_job('tap_queue_w', array['tap_queue_a'], 10)), 2,
    'after resume the next claim takes both jobs'
);

-- list_queues: settings and the queues' jobs
select jobctl.put_queue('tap_queue_b', max_running => 7, claim_rate => 50);
select jobctl.submit_job('tap_queue_t', 'tap_queue_b', '{}');
select results_eq(
    $$select queue, paused, max_running, claim_rate, claim_burst, due, running from jobctl.list_queues()
      where queue in ('tap_queue_a', 'tap_queue_b')$$,
    $$values ('tap_queue_a', false, null::integer, null::numeric, null::integer, 0::bigint, 2::bigint),
             ('tap_queue_b', false, 7, 50::numeric, null, 1, 1)$$,
    'list_queues: each queue''s settings, due and running jobs'
);
select ok(
    (
        select claim_bucket is not null from jobctl.queue
        where queue = 'tap_queue_b'
    ), 'a claim rate gets a bucket'
);
select is(
    (
        select count(*)::integer from jobctl.audit_log
        where action in ('put_queue', 'pause_queue') and detail ->> 'queue' like 'tap_queue_%'
    ),
    4, 'puts and pauses are audited'
);

select * from finish();
rollback;
