-- jobctl.workflow_jobs: a workflow's jobs by its first job's id, oldest first, only the caller's
-- tenants'; no rows for a job that is not a workflow's first; JC001 for an id that cannot be one.
-- Tenants tap_wj_*, queue tap_wj_q.
begin;
select plan(7);

select has_function('jobctl', 'workflow_jobs', array['bigint'], 'workflow_jobs(workflow_id) exists');

create temp table wf as
select * from jobctl.submit_workflow('[
  {"name": "a", "tenant_id": "tap_wj_1", "queue": "tap_wj_q", "payload": {}},
  {"name": "b", "tenant_id": "tap_wj_1", "queue": "tap_wj_q", "payload": {}, "depends_on": ["a"]},
  {"name": "c", "tenant_id": "tap_wj_1", "queue": "tap_wj_q", "payload": {}, "depends_on": ["a", "b"]}
]');
select job_id as plain_id from jobctl.submit_job('tap_wj_1', 'tap_wj_q', '{}') \gset
select min(job_id) as first_id from wf \gset

select results_eq(
    $$select job_id, state from jobctl.workflow_jobs((select min(job_id) from wf))$$,
    $$select job_id, (case name when 'a' then 'pending' else 'waiting' end)::text from wf order by job_id$$,
    'the workflow''s three jobs, oldest first, the children waiting'
);
select is_empty(
    $$select * from jobctl.workflow_jobs((select max(job_id) from wf))$$,
    'a job that is not the workflow''s first: no rows'
);
select is_empty(format('select * from jobctl.workflow_jobs(%s)', :plain_id), 'a job outside any workflow: no rows');

-- a login that acts for another tenant only sees no rows of this one
create role tap_wj_login nologin;
grant jobctl_reader to tap_wj_login;
select jobctl.grant_tenant('tap_wj_login', 'tap_wj_2');
set local session authorization tap_wj_login;
select is_empty(
    format('select * from jobctl.workflow_jobs(%s)', :first_id),
    'another tenant''s workflow: no rows'
);
reset session authorization;

select throws_ok('select * from jobctl.workflow_jobs(0)', 'JC001', 'workflow_id must be a positive job id, not 0', '0');
select throws_ok(
    'select * from jobctl.workflow_jobs(null)', 'JC001', 'workflow_id must be a positive job id, not NULL', 'NULL'
);

select * from finish();
rollback;
