-- Deleting finished jobs needs the jobs:delete scope: a token with jobs:read and
-- jobs:cancel is refused by delete_jobs itself (JC021), whatever the caller authenticated it for, and
-- deletes nothing; a token with jobs:delete deletes. Tenant tap_jds.
begin;
select plan(6);
\ir helpers.psql

create temp table jds_tok as
select
    x.n,
    t.token
from (values (1, '{jobs:read,jobs:cancel}'::text[]), (2, '{jobs:read,jobs:delete}')) as x (n, scopes)
cross join lateral jobctl.create_api_token('tap_jds', x.scopes) as t (token);
-- act as token n for the rest of the transaction ('' : as this login again)
create function pg_temp.act_as(p_n integer) returns text
language sql as $$
    select set_config('jobctl.api_token', coalesce((select t.token from jds_tok as t where t.n = p_n), ''), true)
$$;

create temp table jds_job as
select s.job_id from jobctl.submit_job('tap_jds', 'tap_jds_q', '{}') as s;
select is((select jobctl.cancel_job(j.job_id) from jds_job as j), 'cancelled', 'a finished (cancelled) job');

select ok('jobs:delete' = any(jobctl._api_scopes()), 'jobs:delete is a scope a token may carry');

select pg_temp.act_as(1);
select is(
    pg_temp.error_of($$select * from jobctl.delete_jobs('{"tenant_id": "tap_jds"}')$$),
    'JC021: this token may not jobs:delete (token '
    || (
        select (regexp_match(t.token, '^jct_([0-9]+)_'))[1] from jds_tok as t
        where t.n = 1
    )
    || ' has scopes jobs:cancel, jobs:read)',
    'jobs:read and jobs:cancel: delete_jobs refuses, JC021'
);
select is(
    pg_temp.error_of($$select * from jobctl.delete_jobs('{}')$$),
    'JC021: this token may not jobs:delete (token '
    || (
        select (regexp_match(t.token, '^jct_([0-9]+)_'))[1] from jds_tok as t
        where t.n = 1
    )
    || ' has scopes jobs:cancel, jobs:read)',
    'with no tenant in the filter as well'
);
select pg_temp.act_as(null);
select is(pg_temp.n_jobs('tap_jds'), 1::bigint, 'nothing was deleted');

select pg_temp.act_as(2);
select is(
    (select d.acted from jobctl.delete_jobs('{"tenant_id": "tap_jds"}') as d), 1, 'jobs:delete: delete_jobs deletes'
);
select pg_temp.act_as(null);

select * from finish();
rollback;
