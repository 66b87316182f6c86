-- jobctl.emit_event's caller and jobctl._expire_durable: only a caller acting for the tenant may
-- emit its events (42501 otherwise, nothing recorded); events older than the hot retention, and
-- the steps of jobs that left the hot tables, are deleted; a hot job's steps stay.
-- Tenants tap_emit_t and tap_emit_o, queue tap_emit_q.
begin;
select plan(9);
set local jit = off;

create role tap_emit_login nologin;
grant jobctl_writer to tap_emit_login;
select jobctl.grant_tenant('tap_emit_login', 'tap_emit_o');
set local session authorization tap_emit_login;
select throws_ok(
    $$select jobctl.emit_event('tap_emit_t', 'go')$$, '42501', 'tenant_id: no events:emit access to tenant tap_emit_t',
    'another tenant''s event: 42501'
);
select is(jobctl.emit_event('tap_emit_o', 'go'), 0, 'its own tenant''s event: recorded (no waiter woken)');
reset session authorization;
select is(
    (
        select count(*)::int from jobctl._emitted
        where tenant_id in ('tap_emit_t', 'tap_emit_o')
    ), 1,
    'only its own tenant''s event was recorded'
);

-- API tokens: the scope events:emit, not jobs:submit, lets a token emit its tenant's events (JC021: a
-- token without it)
create temp table emit_tok as
select
    x.n,
    t.token
from (values (1, '{jobs:submit}'::text[]), (2, '{events:emit}')) as x (n, scopes)
cross join lateral jobctl.create_api_token('tap_emit_t', x.scopes) as t (token);
select set_config('jobctl.api_token', (
    select t.token from emit_tok as t
    where t.n = 1
), true);
select throws_ok(
    $$select jobctl.emit_event('tap_emit_t', 'by-token')$$, 'JC021', null, 'a token with jobs:submit only: JC021'
);
select set_config('jobctl.api_token', (
    select t.token from emit_tok as t
    where t.n = 2
), true);
select is(jobctl.emit_event('tap_emit_t', 'by-token'), 0, 'a token with events:emit emits');
select set_config('jobctl.api_token', '', true);

-- retention: an old event, a hot job's steps, an archived job's steps
insert into jobctl._emitted (tenant_id, event, emitted_at) values ('tap_emit_t', 'old', now() - interval '8 days');
create temp table s1 as select * from jobctl.submit_job('tap_emit_t', 'tap_emit_q', '{}');
create temp table c1 as select * from jobctl.claim_job('tap_emit_w', array['tap_emit_q']);
select jobctl.save_step(job_id, lease_epoch, 'kept') from c1;
insert into jobctl._step (job_id, step, job_created_at, tenant_id, attempt, lease_epoch)
values (-1, 'gone', now() - interval '8 days', 'tap_emit_t', 1, 1);
select jobctl._expire_durable(interval '7 days');
select
    is((
        select count(*)::int from jobctl._emitted
        where tenant_id = 'tap_emit_t' and event = 'old'
    ), 0, 'an event emitted 8 days ago is gone');
select is((
    select count(*)::int from jobctl._emitted
    where tenant_id = 'tap_emit_o' and event = 'go'
), 1, 'a new one stays');
select is((
    select count(*)::int from jobctl._step
    where job_id = -1
), 0, 'the steps of a job no longer hot are gone');
select is((select count(*)::int from c1 cross join jobctl.job_steps(c1.job_id)), 1, 'a hot job''s steps stay');

select * from finish();
rollback;
