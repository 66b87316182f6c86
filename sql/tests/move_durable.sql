-- A durable job's state across a tenant's move (docs/durable.md, docs/operations.md): a page
-- (jobctl._move_out_jobs) carries the jobs' saved steps, the outcome of each ended child they
-- spawned, their waits for events and what they are parked on; the import (jobctl._move_in_jobs)
-- puts them back and wakes a wait whose event the target already has; the fenced source refuses
-- emits (JC011) and hands its events over (jobctl._move_out_events, _move_in_events), waking the
-- jobs parked on them; a job that awaits a child while its tenant moves spawns nothing. One
-- database plays both shards: the target's side runs under another tenant's name. Tenants tap_md_*.
begin;
select plan(19);

-- five jobs of tap_md_a, claimed: j1 saves a step and sleeps an hour, j2 and j3 wait for events,
-- j4 awaits a child that completes, j5 stays running
select count(*) from jobctl.submit_jobs((
    select jsonb_agg(jsonb_build_object('tenant_id', 'tap_md_a', 'queue', 'tap_md_q', 'payload', jsonb_build_object('i', i)))
    from generate_series(1, 5) as i
));
create temporary table tap_md_run on commit drop as
select
    c.job_id,
    c.lease_epoch,
    row_number() over (order by c.job_id) as n
from jobctl.claim_job('w', array['tap_md_q'], 5) as c;
create function pg_temp.j(p_n integer) returns bigint
language sql as $$ select job_id from tap_md_run where n = p_n $$;
create function pg_temp.e(p_n integer) returns bigint
language sql as $$ select lease_epoch from tap_md_run where n = p_n $$;

select jobctl.save_step(pg_temp.j(1), pg_temp.e(1), 's1', '{"v": 1}');
select jobctl.sleep_job(pg_temp.j(1), pg_temp.e(1), now() + interval '1 hour');
select outcome from jobctl.await_event(pg_temp.j(2), pg_temp.e(2), 'ev_early');
select outcome from jobctl.await_event(pg_temp.j(3), pg_temp.e(3), 'ev_late', interval '1 day');
select outcome from jobctl.await_job(pg_temp.j(4), pg_temp.e(4), 'c', '{"queue": "tap_md_cq", "payload": {}}');
select jobctl.complete_job(c.job_id, c.lease_epoch, '{"r": 7}') from jobctl.claim_job('w', array['tap_md_cq'], 1) as c;

-- the move starts; j5's first await of a child spawns nothing while the tenant moves
create temporary table tap_md_config on commit drop as select jobctl._move_out_begin('tap_md_a', 1) as c;
select results_eq(
    $$select outcome, child_id from jobctl.await_job(pg_temp.j(5), pg_temp.e(5), 'c5', '{"queue": "tap_md_cq", "payload": {}}')$$,
    $$values ('suspended', null::bigint)$$,
    'await_job while the tenant moves: suspended, no child'
);
select is(
    (
        select row(state, run_at > now() and run_at < now() + interval '2 seconds')::text from jobctl.job
        where job_id = pg_temp.j(5)
    ),
    row('pending', true)::text, 'the parent sleeps a second, to ask again where the move takes it'
);
select is(
    (
        select count(*) from jobctl.job
        where tenant_id = 'tap_md_a' and queue = 'tap_md_cq'
    ), 1::bigint, 'and no second child was submitted'
);

-- the copy: a page with every pending job
create temporary table tap_md_page on commit drop as select jobctl._move_out_jobs('tap_md_a', 0, 100) as p;
select is(
    (select p -> 'parked' from tap_md_page),
    jsonb_build_object(
        pg_temp.j(1)::text, 'sleep', pg_temp.j(2)::text, 'event', pg_temp.j(3)::text, 'event', pg_temp.j(5)::text, 'sleep'
    ),
    'the page says what each parked job is parked on'
);
select is(
    (
        select jsonb_agg(jsonb_build_array(s ->> 'job_id', s ->> 'step', s -> 'result') order by s ->> 'job_id', s ->> 'step')
        from jsonb_array_elements((select p -> 'steps' from tap_md_page)) as s
    ),
    jsonb_build_array(
        jsonb_build_array(pg_temp.j(1)::text, 's1', '{"v": 1}'::jsonb),
        jsonb_build_array(pg_temp.j(4)::text, 'c', jsonb_build_object(
            'child_id', (
                select job_id from jobctl.job
                where tenant_id = 'tap_md_a' and queue = 'tap_md_cq'
            ),
            'state', 'completed', 'result', '{"r": 7}'::jsonb, 'error', null
        ))
    ),
    'its steps: those saved, and the ended child''s outcome as await_job would save it (the child stays here)'
);
select is(
    (
        select jsonb_agg(w ->> 'event' order by w ->> 'event')
        from jsonb_array_elements((select p -> 'waits' from tap_md_page)) as w
    ),
    '["ev_early", "ev_late"]'::jsonb, 'and the waits for events'
);

-- an emit here during the copy, after the page was taken: recorded, it wakes nothing here
select is(jobctl.emit_event('tap_md_a', 'ev_late', '{"p": "late"}'), 0, 'an emit during the copy wakes nothing here');
select is(
    jobctl._move_out_delete('tap_md_a', array(
        select (j ->> 'job_id')::bigint from jsonb_array_elements((select p -> 'jobs' from tap_md_page)) as j
    )), 5, 'the page''s jobs are deleted here'
);
select is(
    (
        select row(
            (
                select count(*) from jobctl._step as s
                where s.job_id in (select r.job_id from tap_md_run as r)
            ),
            (
                select count(*) from jobctl._awaiting as a
                where a.job_id in (select r.job_id from tap_md_run as r)
            ),
            (
                select count(*) from jobctl._spawn as x
                where x.parent_id in (select r.job_id from tap_md_run as r)
            )
        )::text
    ), '(0,0,0)', 'with their steps, waits and spawns'
);

-- the target (tenant tap_md_b) has ev_early already: the import wakes j2 at once
select jobctl._move_in_begin(jsonb_set((select c from tap_md_config), '{tenant,tenant_id}', '"tap_md_b"'));
select jobctl.emit_event('tap_md_b', 'ev_early', '{"p": "early"}');
create temporary table tap_md_in on commit drop as
select jsonb_build_object(
    'jobs', (
        select jsonb_agg(j || '{"tenant_id": "tap_md_b"}')
        from jsonb_array_elements((select p -> 'jobs' from tap_md_page)) as j
    ),
    'events', (select p -> 'events' from tap_md_page),
    'steps', (
        select jsonb_agg(s || '{"tenant_id": "tap_md_b"}')
        from jsonb_array_elements((select p -> 'steps' from tap_md_page)) as s
    ),
    'waits', (
        select jsonb_agg(w || '{"tenant_id": "tap_md_b"}')
        from jsonb_array_elements((select p -> 'waits' from tap_md_page)) as w
    ),
    'parked', (select p -> 'parked' from tap_md_page)
) as p;
select is(jobctl._move_in_jobs((select p from tap_md_in)), 5, 'import inserts the jobs');
select is(jobctl._move_in_jobs((select p from tap_md_in)), 0, 'import again inserts nothing');
select is(
    (
        select jsonb_object_agg(job_id::text, parked) from jobctl._delayed
        where tenant_id = 'tap_md_b' and parked is not null
    ),
    jsonb_build_object(pg_temp.j(1)::text, 'sleep', pg_temp.j(3)::text, 'event', pg_temp.j(5)::text, 'sleep'),
    'the parked jobs are parked as they were; j2, whose event the target had, is due'
);
select is(
    (
        select row(j.run_at <= now(), a.job_id is null)::text
        from jobctl.job as j
        left join jobctl._awaiting as a on j.job_id = a.job_id
        where j.job_id = pg_temp.j(2)
    ), '(t,t)', 'j2 woken at the import: due, no wait left'
);
select is(
    (
        select array_agg(step order by step) from jobctl._step
        where tenant_id = 'tap_md_b'
    ),
    array['c', 's1'], 'the steps are here'
);

-- the fence: the source refuses emits and hands its events over
select jobctl._move_out_fence('tap_md_a');
select jobctl._move_out_fence('tap_md_a');
select throws_ok(
    $$select jobctl.emit_event('tap_md_a', 'ev_other')$$, 'JC011', 'tenant tap_md_a has moved to shard 1',
    'an emit sent to the fenced source is refused'
);
create temporary table tap_md_events on commit drop as select jobctl._move_out_events('tap_md_a') as e;
select is(
    (select jsonb_agg(e ->> 'event' order by e ->> 'event') from jsonb_array_elements((select e from tap_md_events)) as e),
    '["ev_late"]'::jsonb, 'the source''s events, handed over'
);
select is(jobctl._move_in_events('tap_md_b', (select e from tap_md_events)), 1, 'recorded on the target, they wake j3');
select is(
    (
        select row(j.run_at <= clock_timestamp(), e.payload)::text
        from jobctl.job as j, jobctl._emitted as e
        where j.job_id = pg_temp.j(3) and e.tenant_id = 'tap_md_b' and e.event = 'ev_late'
    ), row(true, '{"p": "late"}'::jsonb)::text, 'due, with the source''s payload to read'
);
select is(jobctl._move_in_events('tap_md_b', (select e from tap_md_events)), 0, 'again: nothing new');

select * from finish();
rollback;
