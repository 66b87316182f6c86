-- jobctl._debounce_repeats: the "debounce" step of jobctl._submit: repeats of a key in replace or
-- preserve_run_at mode update their pending holder, in input order; keep mode and holders no longer
-- pending are left as they are. One holder's update: dedup_scope.sql. Tenants tap_dr_*.
begin;
select plan(6);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', '_debounce_repeats', array['jobctl._job_spec[]', 'bigint[]', 'boolean[]', 'bigint[]'],
    '_debounce_repeats exists'
);

create function pg_temp.spec(p_payload jsonb, p_mode text, p_run_at timestamptz default null) returns jobctl._job_spec
language sql as $$
    select row('tap_dr_a', 'q', p_payload, 0, p_run_at, 'k', null, null, null, null, null, null, null, null, null, null,
        null, null, null, p_mode)::jobctl._job_spec
$$;
create temp table h as
select s.job_id as id
from jobctl.submit_job('tap_dr_a', 'q', '{"v": 0}', run_at => now() + interval '1 hour', dedup_key => 'k') as s;

select jobctl._debounce_repeats(
    array[pg_temp.spec('{"v": 1}', 'keep')], array[(select h.id from h)], '{t}', null
);
select is(
    (
        select j.payload from jobctl.job as j
        where j.job_id = (select h.id from h)
    ), '{"v": 0}'::jsonb,
    'keep mode: the holder as it was'
);

select jobctl._debounce_repeats(
    array[pg_temp.spec('{"v": 2}', 'preserve_run_at', now() + interval '5 hours'), pg_temp.spec('{"v": 3}', 'preserve_run_at')],
    array[(select h.id from h), (select h.id from h)], '{t,t}', null
);
select is(
    (
        select row(j.payload, j.run_at = now() + interval '1 hour')::text from jobctl.job as j
        where j.job_id = (select h.id from h)
    ),
    row('{"v": 3}'::jsonb, true)::text,
    'preserve_run_at: the last repeat''s payload, the holder''s run_at'
);

-- answer -1: the first new job of the call (p_ids[1]); a spec that is not a repeat is left alone
select jobctl._debounce_repeats(
    array[pg_temp.spec('{"v": 9}', 'replace'), pg_temp.spec('{"v": 4}', 'replace', now() + interval '2 hours')],
    array[-1, -1]::bigint[], '{f,t}', array[(select h.id from h)]
);
select is(
    (
        select row(j.payload, j.run_at = now() + interval '2 hours')::text from jobctl.job as j
        where j.job_id = (select h.id from h)
    ),
    row('{"v": 4}'::jsonb, true)::text,
    'replace: the repeat''s payload and run_at, on the new job its answer names'
);
select is(pg_temp.queued((select h.id from h)), 'delayed', 'its queue row moved with it');

-- a holder no longer pending is left as it is
update jobctl.job set state = 'running'
where job_id = (select h.id from h);
select jobctl._debounce_repeats(array[pg_temp.spec('{"v": 5}', 'replace')], array[(select h.id from h)], '{t}', null);
select is(
    (
        select j.payload from jobctl.job as j
        where j.job_id = (select h.id from h)
    ), '{"v": 4}'::jsonb,
    'a holder that is not pending: unchanged'
);

select * from finish();
rollback;
