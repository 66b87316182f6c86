-- jobctl.await_event and jobctl.emit_event: a job parked on its tenant's event is woken by the
-- first emit, reads that emit's payload, and keeps reading it; an event emitted before the wait is
-- received at once; a timeout passed answers timed_out for good; another epoch is fenced and
-- writes nothing; an emit wakes only its tenant's waiters of that event; a cancel ends the wait.
-- Tenants tap_ev_t and tap_ev_o, queue tap_ev_q.
begin;
select plan(38);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'await_event', array['bigint', 'bigint', 'text', 'interval'], 'await_event exists');
select has_function('jobctl', 'emit_event', array['text', 'text', 'jsonb'], 'emit_event exists');

-- a wait, parked
create temp table s1 as select * from jobctl.submit_job('tap_ev_t', 'tap_ev_q', '{}');
create temp table c1 as select * from jobctl.claim_job('tap_ev_w', array['tap_ev_q']);
select results_eq(
    $$select a.outcome, a.payload from c1 cross join jobctl.await_event(c1.job_id, c1.lease_epoch + 1000, 'go') as a$$,
    $$values ('fenced', null::jsonb)$$, 'another epoch: fenced'
);
select is((select pg_temp.queued(job_id) from c1), 'running', 'and nothing changed');
select results_eq(
    $$select a.outcome, a.payload
      from c1 cross join jobctl.await_event(c1.job_id, c1.lease_epoch, 'go', interval '1 hour') as a$$,
    $$values ('suspended', null::jsonb)$$, 'not emitted yet: suspended'
);
select ok(
    (
        select
            j.state = 'pending'
            and j.attempt = 0
            and j.run_at between now() + interval '59 minutes' and clock_timestamp() + interval '1 hour'
        from c1 cross join pg_temp.job(c1.job_id) as j
    ),
    'pending, the attempt not counted, due at its timeout'
);
select results_eq(
    $$select d.parked, a.event from c1 join jobctl._delayed as d using (job_id) join jobctl._awaiting as a using (job_id)$$,
    $$values ('event', 'go')$$, 'its token parked ''event'' and its wait recorded'
);
select results_eq(
    $$select a.outcome from c1 cross join jobctl.await_event(c1.job_id, c1.lease_epoch, 'go') as a$$,
    $$values ('fenced')$$, 'the parked epoch is fenced'
);

-- another tenant's waiter of the same event name, and this tenant's waiter of another event
create temp table so as select * from jobctl.submit_job('tap_ev_o', 'tap_ev_q', '{}');
create temp table co as select * from jobctl.claim_job('tap_ev_w', array['tap_ev_q']);
select
    is(
        (select a.outcome from co cross join jobctl.await_event(co.job_id, co.lease_epoch, 'go') as a),
        'suspended',
        'tenant o waits on its own go'
    );
create temp table s3 as select * from jobctl.submit_job('tap_ev_t', 'tap_ev_q', '{}');
create temp table c3 as select * from jobctl.claim_job('tap_ev_w', array['tap_ev_q']);
select
    is(
        (select a.outcome from c3 cross join jobctl.await_event(c3.job_id, c3.lease_epoch, 'other') as a),
        'suspended',
        'another job waits on other, with no timeout'
    );
select
    is(
        (select j.run_at from c3 cross join pg_temp.job(c3.job_id) as j),
        '9999-01-01 00:00:00+00'::timestamptz,
        'no timeout: due at 9999-01-01'
    );

-- the emit
select is(jobctl.emit_event('tap_ev_t', 'go', '{"v": 1}'), 1, 'the first emit wakes the one waiter of its tenant and event');
select is(jobctl.emit_event('tap_ev_t', 'go', '{"v": 2}'), 0, 'a repeat: 0');
select results_eq(
    $$select e.payload from jobctl._emitted as e where e.tenant_id = 'tap_ev_t' and e.event = 'go'$$,
    $$values ('{"v": 1}'::jsonb)$$, 'and the first payload stays'
);
select
    ok(
        (
            select d.run_at <= clock_timestamp() and d.parked is null and j.run_at = d.run_at
            from c1 inner join jobctl._delayed as d on c1.job_id = d.job_id
            cross join pg_temp.job(c1.job_id) as j
        ),
        'the woken job is due now, no longer parked'
    );
select is((select count(*)::int from jobctl._awaiting inner join c1 on _awaiting.job_id = c1.job_id), 0, 'its wait is gone');
select results_eq(
    $$select f.job_id, f.parked, f.awaiting from jobctl.find_jobs('{"tenant_id": "tap_ev_t", "parked": "event"}') as f$$,
    $$select job_id, 'event', 'other' from c3$$, 'the woken job is parked no more; the other waiter is, on its event'
);
select is((select pg_temp.queued(job_id) from co), 'delayed', 'tenant o''s waiter sleeps on');
select is((select pg_temp.queued(job_id) from c3), 'delayed', 'and so does the waiter of another event');
select
    is((
        select h.detail from c1 cross join jobctl.job_history(c1.job_id) as h
        where h.event = 'woken'
    ), 'go', 'history: woken by go');

-- resumed: received, with the first payload, again and again
select jobctl._promote_due();
create temp table c1b as select * from jobctl.claim_job('tap_ev_w', array['tap_ev_q']);
select results_eq($$select job_id, attempt from c1b$$, $$select job_id, 1 from c1$$, 'the woken job is claimed, attempt 1 again');
select results_eq(
    $$select a.outcome, a.payload
      from c1b cross join jobctl.await_event(c1b.job_id, c1b.lease_epoch, 'go', interval '1 hour') as a$$,
    $$values ('received', '{"v": 1}'::jsonb)$$, 'resumed: received, the first payload'
);
select results_eq(
    $$select a.outcome, a.payload from c1b cross join jobctl.await_event(c1b.job_id, c1b.lease_epoch, 'go') as a$$,
    $$values ('received', '{"v": 1}'::jsonb)$$, 'asked again: the same'
);
select results_eq(
    $$select s.step, s.result from c1b cross join jobctl.job_steps(c1b.job_id) as s$$,
    $$values ('event:go', '{"outcome": "received", "payload": {"v": 1}}'::jsonb)$$, 'the outcome is the step event:go'
);

-- emitted before the wait: received at once, the lease kept
select jobctl.emit_event('tap_ev_t', 'early', null);
select results_eq(
    $$select a.outcome, a.payload from c1b cross join jobctl.await_event(c1b.job_id, c1b.lease_epoch, 'early') as a$$,
    $$values ('received', null::jsonb)$$, 'an event emitted before the wait: received at once'
);
select is((select pg_temp.queued(job_id) from c1b), 'running', 'and the lease is kept');

-- a timeout: timed_out, for good, even after a later emit
select
    is(
        (select a.outcome from c1b cross join jobctl.await_event(c1b.job_id, c1b.lease_epoch, 'late', interval '1 minute') as a),
        'suspended',
        'a wait with a timeout'
    );
update jobctl._awaiting set timeout_at = now() - interval '1 second', run_at = now() - interval '1 second'
where job_id = (select job_id from c1b);
select pg_temp.make_due(job_id) from c1b;
select jobctl._promote_due();
create temp table c1c as select * from jobctl.claim_job('tap_ev_w', array['tap_ev_q']);
select results_eq($$select job_id from c1c$$, $$select job_id from c1$$, 'its timeout passed: claimed again');
select
    is(
        (select a.outcome from c1c cross join jobctl.await_event(c1c.job_id, c1c.lease_epoch, 'late', interval '1 minute') as a),
        'timed_out',
        'resumed: timed_out'
    );
select is(jobctl.emit_event('tap_ev_t', 'late', '1'), 0, 'a later emit wakes nobody');
select
    is(
        (select a.outcome from c1c cross join jobctl.await_event(c1c.job_id, c1c.lease_epoch, 'late') as a),
        'timed_out',
        'and the answer stays timed_out'
    );

-- a cancel ends the wait
select is((select jobctl.cancel_job(job_id) from c3), 'cancelled', 'a waiter cancelled');
select is((select count(*)::int from jobctl._awaiting inner join c3 on _awaiting.job_id = c3.job_id), 0, 'its wait is gone');
select is(jobctl.emit_event('tap_ev_t', 'other'), 0, 'its event wakes nobody');

-- bounds
select
    throws_ok(
        $$select * from jobctl.await_event(1, 1, '')$$,
        'JC001',
        'event must be 1 to 200 printable characters',
        'an empty event: JC001'
    );
select throws_ok($$select jobctl.emit_event('tap_ev_t', repeat('e', 201))$$, 'JC001', null, 'an event of 201 characters: JC001');
select throws_ok($$select * from jobctl.await_event(1, 1, 'x', interval '0')$$, 'JC001', null, 'a timeout of 0: JC001');
select throws_ok(
    $$select jobctl.emit_event('tap_ev_t', 'big', to_jsonb(repeat('x', 65535)))$$,
    'JC001',
    null,
    'a payload of 65537 bytes: JC001'
);

select * from finish();
rollback;
