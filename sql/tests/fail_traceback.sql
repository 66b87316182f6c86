-- Jobctl.fail_job keeps a bounded traceback with the failure (job.last_traceback,
-- get_job's last_traceback): the last 8,192 characters, cut from the top ('...' then the last 8,189)
-- so the innermost frames stay; NULL for a failure without one (the reaper's), cleared by a completion
-- or a cancel; the lists (list_jobs, find_jobs) leave it NULL. And submit_workflow keeps each job's
-- name (job.workflow_name: get_job, find_jobs, list_jobs). Tenant tap_tb_t, queues tap_tb_*.
begin;
select plan(19);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', 'fail_job', array['bigint', 'bigint', 'text', 'boolean', 'text', 'text'],
    'fail_job(job_id, lease_epoch, error, retryable, traceback, cause)'
);

-- fail the next job of a queue with a traceback; the job's id
create function pg_temp.fail_with(p_queue text, p_traceback text, p_retryable boolean default true)
returns bigint
language plpgsql as $$
declare
    v_claim record;
begin
    select * into strict v_claim from jobctl.claim_job('tap_tb_w', array[p_queue]);
    perform jobctl.fail_job(v_claim.job_id, v_claim.lease_epoch, 'RuntimeError: boom', p_retryable, p_traceback);
    return v_claim.job_id;
end
$$;

create temp table tb as
select repeat('x', 8192 - length(E'File "h.py", line 9, in inner\n')) || E'File "h.py", line 9, in inner\n' as at_bound;
select is(length((select at_bound from tb)), 8192, 'the test''s traceback is 8,192 characters');

-- at the bound: kept as it is
select jobctl.submit_job('tap_tb_t', 'tap_tb_at', '{}', max_attempts => 1);
create temp table f_at as select pg_temp.fail_with('tap_tb_at', (select at_bound from tb)) as job_id;
select is(
    (select g.last_traceback from f_at cross join jobctl.get_job(f_at.job_id) as g), (select at_bound from tb),
    'a traceback of 8,192 characters is kept whole (get_job''s last_traceback)'
);
select is(
    (select j.last_traceback from f_at cross join pg_temp.job(f_at.job_id) as j), (select at_bound from tb),
    'on the job row'
);

-- one past: cut from the top, the innermost frame (the end) kept
select jobctl.submit_job('tap_tb_t', 'tap_tb_past', '{}', max_attempts => 1);
create temp table f_past as select pg_temp.fail_with('tap_tb_past', 'T' || (select at_bound from tb)) as job_id;
select is(
    (select length(g.last_traceback) from f_past cross join jobctl.get_job(f_past.job_id) as g), 8192,
    'a traceback of 8,193 characters is cut to 8,192'
);
select is(
    (select g.last_traceback from f_past cross join jobctl.get_job(f_past.job_id) as g),
    '...' || right((select at_bound from tb), 8189),
    'cut from the top: ''...'' and its last 8,189 characters (the innermost frame stays)'
);
select ok(
    (select g.last_traceback like '%in inner' || chr(10) from f_past cross join jobctl.get_job(f_past.job_id) as g),
    'it ends with the innermost frame'
);

-- a much longer one: the same rule
select jobctl.submit_job('tap_tb_t', 'tap_tb_long', '{}', max_attempts => 1);
create temp table f_long as select pg_temp.fail_with('tap_tb_long', repeat('y', 100000) || 'the end') as job_id;
select is(
    (select g.last_traceback from f_long cross join jobctl.get_job(f_long.job_id) as g),
    '...' || repeat('y', 8189 - 7) || 'the end',
    'a traceback of 100,007 characters: ''...'' and its last 8,189'
);

-- hostile text is stored as given (the dashboard, the CLI and the API escape it on display)
select jobctl.submit_job('tap_tb_t', 'tap_tb_hostile', '{}', max_attempts => 2, backoff => '{"base": "0 seconds"}');
create temp table f_h as
select pg_temp.fail_with('tap_tb_hostile', E'<script>alert(1)</script>\x1b[31m') as job_id;
select is(
    (select g.last_traceback from f_h cross join jobctl.get_job(f_h.job_id) as g), E'<script>alert(1)</script>\x1b[31m',
    'markup and control characters are stored as given'
);
select is(
    (
        select h.detail from f_h cross join jobctl.job_history(f_h.job_id) as h
        where h.event = 'failed'
    ),
    'RuntimeError: boom', 'the failed event''s detail is the error alone (job_history unchanged)'
);
-- the next failure without a traceback (the reaper's, a timeout, a caller of the four-argument form)
-- clears it: the traceback always belongs to last_error
select jobctl.fail_job(c.job_id, c.lease_epoch, 'timed out') from jobctl.claim_job('tap_tb_w', array['tap_tb_hostile']) as c;
select results_eq(
    $$select g.state, g.last_error, g.last_traceback from f_h cross join jobctl.get_job(f_h.job_id) as g$$,
    $$values ('dead', 'timed out', null::text)$$,
    'a failure without a traceback leaves none'
);

-- the reaper's timeout: no traceback
select jobctl.submit_job('tap_tb_t', 'tap_tb_reap', '{}', max_attempts => 2, backoff => '{"base": "0 seconds"}');
create temp table f_r as select pg_temp.fail_with('tap_tb_reap', 'Traceback: reaped') as job_id;
create temp table c_r as select * from jobctl.claim_job('tap_tb_w', array['tap_tb_reap']);
update jobctl._running set lease_expires_at = now() - interval '1 minute'
where job_id in (select job_id from c_r);
-- keep pg_cron's reaper out of this transaction (the lock is re-entrant for this session)
select name from jobctl._lock
where name = 'reap' and bucket = 0 for update;
select cmp_ok(jobctl.reap_expired_leases(), '>=', 1, 'the reaper ends the expired attempt');
select results_eq(
    $$select g.state, g.last_traceback from f_r cross join jobctl.get_job(f_r.job_id) as g$$,
    $$values ('dead', null::text)$$,
    'the reaper''s failure has no traceback'
);

-- a completion clears it, as it clears last_error
select jobctl.submit_job('tap_tb_t', 'tap_tb_ok', '{}', max_attempts => 2, backoff => '{"base": "0 seconds"}');
create temp table f_ok as select pg_temp.fail_with('tap_tb_ok', 'Traceback: once') as job_id;
select jobctl.complete_job(c.job_id, c.lease_epoch) from jobctl.claim_job('tap_tb_w', array['tap_tb_ok']) as c;
select results_eq(
    $$select g.state, g.last_error, g.last_traceback from f_ok cross join jobctl.get_job(f_ok.job_id) as g$$,
    $$values ('completed', null::text, null::text)$$,
    'a completion clears last_error and last_traceback'
);

-- empty: none
select jobctl.submit_job('tap_tb_t', 'tap_tb_empty', '{}', max_attempts => 1);
create temp table f_e as select pg_temp.fail_with('tap_tb_empty', '') as job_id;
select is(
    (select g.last_traceback from f_e cross join jobctl.get_job(f_e.job_id) as g), null, 'an empty traceback: NULL'
);

-- the lists leave it NULL, as they leave parent_results (up to 8 KiB a job: get_job's alone)
select is(
    (select l.last_traceback from jobctl.list_jobs('tap_tb_t', queue => 'tap_tb_at') as l), null,
    'list_jobs leaves last_traceback NULL (get_job shows it)'
);

-- submit_workflow keeps the names the jobs were given
create temp table wf as
select * from jobctl.submit_workflow('[
  {"name": "extract", "tenant_id": "tap_tb_t", "queue": "tap_tb_wf", "payload": {}},
  {"name": "<b>clean</b>", "tenant_id": "tap_tb_t", "queue": "tap_tb_wf", "payload": {}, "depends_on": ["extract"]}
]');
select results_eq(
    $$select g.workflow_name from wf cross join jobctl.get_job(wf.job_id) as g order by g.job_id$$,
    $$values ('extract'), ('<b>clean</b>')$$,
    'get_job shows each workflow job''s name as submitted'
);
select results_eq(
    $$select f.job_id, f.workflow_name from jobctl.find_jobs(
        jsonb_build_object('job_ids', (select jsonb_agg(job_id) from wf))) as f order by f.job_id$$,
    $$select job_id, name from wf order by job_id$$,
    'find_jobs shows them (the dashboard''s workflow panel reads them so)'
);
select is(
    (select g.workflow_name from jobctl.submit_job('tap_tb_t', 'tap_tb_wf', '{}') as s cross join jobctl.get_job(s.job_id) as g),
    null, 'a job submitted alone has no name'
);

select * from finish();
rollback;
