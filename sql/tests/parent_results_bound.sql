-- parent_results is bounded: the parents' results, as JSON text, add up to at most
-- 8 MiB (8,388,608 bytes) in one call; one byte past it, parent_results refuses with JC001 naming
-- job_id and get_job leaves parent_results NULL (it still answers). The results here compress to a
-- few KB on disk: the bound is on what a call builds, not on what is stored. Tenant tap_prb, queue
-- tap_prb_q.
begin;
select plan(10);
\ir helpers.psql

-- ten parents: nine complete with a string of 932,065 characters (932,067 bytes of JSON text with its
-- quotes), one of them 5 bytes longer, so the nine add up to 8,388,608 bytes; the tenth's result is 1
create temp table prb as
select
    s.job_id,
    row_number() over (order by s.job_id) as n
from generate_series(1, 10) as g (i)
cross join lateral jobctl.submit_job('tap_prb', 'tap_prb_q', jsonb_build_object('i', g.i)) as s;
create function pg_temp.complete_all() returns integer
language plpgsql as $$
declare
    v record;
    v_n integer := 0;
begin
    loop
        select * into v from jobctl.claim_job('tap_prb_w', array['tap_prb_q'], 1);
        exit when v.job_id is null;
        perform jobctl.complete_job(v.job_id, v.lease_epoch, case
            when v.job_id = (select job_id from prb where n = 10) then '1'::jsonb
            when v.job_id = (select job_id from prb where n = 9) then to_jsonb(repeat('x', 932070))
            else to_jsonb(repeat('x', 932065))
        end);
        v_n := v_n + 1;
    end loop;
    return v_n;
end
$$;
select is(pg_temp.complete_all(), 10, 'ten parents complete');
select is(
    (
        select sum(octet_length(result::text))::bigint from jobctl.job
        where job_id in (
            select prb.job_id from prb
            where prb.n <= 9
        )
    ),
    8388608::bigint,
    'the nine results are 8,388,608 bytes of JSON text'
);
select ok(
    (
        select sum(pg_column_size(result)) from jobctl.job
        where job_id in (
            select prb.job_id from prb
            where prb.n <= 9
        )
    ) < 1048576,
    'and under 1 MiB stored (compressed)'
);

create temp table prb_child (k text, job_id bigint);
insert into prb_child (k, job_id)
select
    'at' as k,
    s.job_id
from jobctl.submit_job('tap_prb', 'tap_prb_q', '{}', depends_on => array(
    select prb.job_id from prb
    where prb.n <= 9
    order by prb.n
)) as s;
insert into prb_child (k, job_id)
select
    'past' as k,
    s.job_id
from jobctl.submit_job('tap_prb', 'tap_prb_q', '{}', depends_on => array(
    select prb.job_id from prb
    order by prb.n
)) as s;
create function pg_temp.child(p_k text) returns bigint
language sql as $$ select job_id from prb_child where k = p_k $$;

-- at the bound: the whole object
select is(
    (select count(*) from jsonb_object_keys(jobctl.parent_results(pg_temp.child('at')))),
    9::bigint,
    'at the bound (8,388,608 bytes): parent_results returns the nine results'
);
select is(
    (select g.parent_results from jobctl.get_job(pg_temp.child('at')) as g),
    jobctl.parent_results(pg_temp.child('at')),
    'at the bound: get_job shows them'
);
-- one byte past it
select is(
    pg_temp.error_of(format('select jobctl.parent_results(%s)', pg_temp.child('past'))),
    format(
        'JC001: parent_results: the results of job %s''s 10 parents are over 8 MiB of JSON text together (field: job_id)',
        pg_temp.child('past')
    ),
    'one byte past the bound: parent_results refuses, JC001 naming job_id'
);
select is(
    pg_temp.hint_of(format('select jobctl.parent_results(%s)', pg_temp.child('past'))),
    'Read each parent''s result alone: get_job(parent id) for each id of the job''s depends_on.',
    'and hints at reading each parent alone'
);
select is(
    (select count(*) from jobctl.get_job(pg_temp.child('past'))),
    1::bigint,
    'past the bound: get_job still answers'
);
select is(
    (select g.parent_results is null and cardinality(g.depends_on) = 10 from jobctl.get_job(pg_temp.child('past')) as g),
    true,
    'with parent_results NULL and depends_on listing the ten parents'
);
select is(
    (select octet_length(g.result::text) from jobctl.get_job((
        select job_id from prb
        where n = 9
    )) as g),
    932072,
    'a parent''s result read alone with get_job'
);

select * from finish();
rollback;
