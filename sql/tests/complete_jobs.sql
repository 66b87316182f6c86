-- jobctl.complete_jobs: a batch of completions, one row per input in input order, completed = false
-- where fenced; results[i] (when given) kept as job i's result. Tenant tap_completes_t, queues
-- tap_completes_*; every claim names its queue.
begin;
select plan(30);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function(
    'jobctl', 'complete_jobs', array['bigint[]', 'bigint[]', 'jsonb[]'],
    'complete_jobs(job_ids, lease_epochs, results) exists'
);
select is(
    (
        select pronargdefaults from pg_proc
        where oid = 'jobctl.complete_jobs(bigint[], bigint[], jsonb[])'::regprocedure
    ),
    1::smallint,
    'results has a default, so the contract''s two-argument call still works'
);

-- four running jobs, numbered 1..4 in claim order
do $do$
begin
    perform jobctl.submit_job('tap_completes_t', 'tap_completes_q', jsonb_build_object('n', n), priority => 10 - n)
    from generate_series(1, 4) as n;
end
$do$;
create temp table c as
select
    x.*,
    (x.payload ->> 'n')::integer as n
from jobctl.claim_job('tap_completes_w', array['tap_completes_q'], 4) as x;
select is((select count(*) from c), 4::bigint, 'four jobs are running');

-- input: 3, 1 (stale epoch), 4, unknown id; job 2 not in the batch
create temp table batch_in as
select
    c.job_id,
    c.lease_epoch - case when c.n = 1 then 1 else 0 end as lease_epoch,
    case c.n when 3 then 1 when 1 then 2 when 4 then 3 end as ord
from c
where c.n in (1, 3, 4)
union all
select
    -1 as job_id,
    1 as lease_epoch,
    4 as ord;
create temp table batch as
select r.*
from jobctl.complete_jobs(
    (select array_agg(job_id order by ord) from batch_in),
    (select array_agg(lease_epoch order by ord) from batch_in)
) with ordinality as r (job_id, completed, ord);
select results_eq(
    $$select b.job_id, b.completed from batch as b order by b.ord$$,
    $$select job_id, true from c where n = 3
      union all select job_id, false from c where n = 1
      union all select job_id, true from c where n = 4
      union all select -1::bigint, false$$,
    'one row per input, in input order; fenced and unknown ones are false'
);
select results_eq(
    $$select c.n, j.state, j.result, j.finished_at is not null
      from c inner join jobctl.job as j on c.job_id = j.job_id order by c.n$$,
    $$values (1, 'running', null::jsonb, false), (2, 'running', null, false), (3, 'completed', null, true),
        (4, 'completed', null, true)$$,
    'only the jobs under their current epoch are completed (with a NULL result)'
);
select results_eq(
    $$select c.n from c inner join jobctl._running as r on c.job_id = r.job_id order by c.n$$,
    $$values (1), (2)$$,
    'the completed jobs left jobctl._running; the others keep their lease'
);
select results_eq(
    $$select completed from jobctl.complete_jobs(
        array[(select job_id from c where n = 3)], array[(select lease_epoch from c where n = 3)])$$,
    $$values (false)$$,
    'completing again: false'
);
select results_eq(
    $$select job_id, completed from jobctl.complete_jobs(
        array(select job_id from c where n in (1, 2) order by n desc),
        array(select lease_epoch from c where n in (1, 2) order by n desc))$$,
    $$select job_id, true from c where n = 2 union all select job_id, true from c where n = 1$$,
    'the remaining two complete, rows in input order'
);
select is_empty(
    $$select * from jobctl.complete_jobs(array[]::bigint[], array[]::bigint[])$$, 'empty arrays: no row'
);

-- errors
select throws_ok(
    $$select jobctl.complete_jobs(array[1, 2]::bigint[], array[1]::bigint[])$$,
    'JC001', 'job_ids, lease_epochs (and results, when given) must be arrays of the same length',
    'arrays of different lengths: JC001'
);
select throws_ok(
    $$select jobctl.complete_jobs(null, array[1]::bigint[])$$,
    'JC001', 'job_ids, lease_epochs (and results, when given) must be arrays of the same length', 'NULL job_ids: JC001'
);
select throws_ok(
    $$select jobctl.complete_jobs(array[1]::bigint[], null)$$,
    'JC001', 'job_ids, lease_epochs (and results, when given) must be arrays of the same length', 'NULL lease_epochs: JC001'
);

-- the same job twice, once under a stale epoch: only the current epoch's row completed it
create temp table j5 as
select * from jobctl.submit_job('tap_completes_t', 'tap_completes_q5', '{}');
create temp table c5 as
select * from jobctl.claim_job('tap_completes_w', array['tap_completes_q5']);
create temp table twice as
select r.*
from c5 cross join jobctl.complete_jobs(
    array[c5.job_id, c5.job_id], array[c5.lease_epoch - 1, c5.lease_epoch]
) with ordinality as r (job_id, completed, ord);
select is((select count(*) from twice), 2::bigint, 'a job listed twice: two rows');
select is((select j.state from c5 cross join jobctl.get_job(c5.job_id) as j), 'completed', 'the job is completed once');
select is(
    (select array_agg(completed order by ord) from twice), array[false, true],
    'the row with the stale epoch says false, the one with the current epoch true'
);

-- results: results[i] is kept as job_ids[i]'s result; a NULL element or NULL results: result NULL
do $do$
begin
    perform jobctl.submit_job('tap_completes_t', 'tap_completes_r', jsonb_build_object('n', n), priority => 10 - n)
    from generate_series(1, 5) as n;
end
$do$;
create temp table r as
select
    x.*,
    (x.payload ->> 'n')::integer as n
from jobctl.claim_job('tap_completes_w', array['tap_completes_r'], 5) as x;
select is((select count(*) from r), 5::bigint, 'five more jobs are running');
-- input: 3, 1, 2 (stale epoch), 4 with a NULL result; job 5 not in the batch
create temp table rin as
select
    r.job_id,
    r.lease_epoch - case when r.n = 2 then 1 else 0 end as lease_epoch,
    v.result,
    v.ord
from r
inner join (
    values
    (3, '{"n": 3, "ok": true}'::jsonb, 1),
    (1, '[1, "one"]', 2),
    (2, '"fenced"', 3),
    (4, null, 4)
) as v (n, result, ord) on r.n = v.n;
create temp table rbatch as
select x.*
from jobctl.complete_jobs(
    (select array_agg(job_id order by ord) from rin),
    (select array_agg(lease_epoch order by ord) from rin),
    (select array_agg(result order by ord) from rin)
) with ordinality as x (job_id, completed, ord);
select results_eq(
    $$select rb.job_id, rb.completed from rbatch as rb order by rb.ord$$,
    $$select job_id, true from r where n = 3
      union all select job_id, true from r where n = 1
      union all select job_id, false from r where n = 2
      union all select job_id, true from r where n = 4$$,
    'with results: one row per input, in input order; the stale epoch is fenced'
);
select results_eq(
    $$select r.n, j.state, j.result from r inner join jobctl.job as j on r.job_id = j.job_id order by r.n$$,
    $$values (1, 'completed', '[1, "one"]'::jsonb), (2, 'running', null), (3, 'completed', '{"n": 3, "ok": true}'),
        (4, 'completed', null), (5, 'running', null)$$,
    'each completed job keeps its own result (not its neighbour''s); a NULL element: result NULL; fenced: none stored'
);
select results_eq(
    $$select r.n, g.result from r cross join jobctl.get_job(r.job_id) as g where r.n in (1, 3) order by r.n$$,
    $$values (1, '[1, "one"]'::jsonb), (3, '{"n": 3, "ok": true}')$$,
    'get_job shows the results'
);

-- results of the wrong length: JC001, nothing changed
select throws_ok(
    $$select * from jobctl.complete_jobs(
        (select array_agg(job_id order by n) from r where n in (2, 5)),
        (select array_agg(lease_epoch order by n) from r where n in (2, 5)),
        array['{}']::jsonb[])$$,
    'JC001', 'job_ids, lease_epochs (and results, when given) must be arrays of the same length',
    'one result for two jobs: JC001'
);
select throws_ok(
    $$select * from jobctl.complete_jobs(
        (select array_agg(job_id order by n) from r where n in (2, 5)),
        (select array_agg(lease_epoch order by n) from r where n in (2, 5)),
        array['{}', '{}', '{}']::jsonb[])$$,
    'JC001', 'job_ids, lease_epochs (and results, when given) must be arrays of the same length',
    'three results for two jobs: JC001'
);
select throws_ok(
    $$select * from jobctl.complete_jobs(
        (select array_agg(job_id order by n) from r where n in (2, 5)),
        (select array_agg(lease_epoch order by n) from r where n in (2, 5)),
        '{}'::jsonb[])$$,
    'JC001', 'job_ids, lease_epochs (and results, when given) must be arrays of the same length',
    'an empty results array for two jobs: JC001'
);
select results_eq(
    $$select r.n, j.state, j.result, rr.job_id is not null
      from r inner join jobctl.job as j on r.job_id = j.job_id left join jobctl._running as rr on r.job_id = rr.job_id
      where r.n in (2, 5) order by r.n$$,
    $$values (2, 'running', null::jsonb, true), (5, 'running', null, true)$$,
    'the errors changed nothing: both jobs still running under their lease, no result'
);

-- NULL results (explicit, and by name): completed with result NULL
select results_eq(
    $$select completed from jobctl.complete_jobs(
        array(select job_id from r where n = 2), array(select lease_epoch from r where n = 2), null)$$,
    $$values (true)$$,
    'results NULL: the job completes'
);
select results_eq(
    $$select completed from jobctl.complete_jobs(
        job_ids => array(select job_id from r where n = 5), lease_epochs => array(select lease_epoch from r where n = 5),
        results => array['{"by": "name"}']::jsonb[])$$,
    $$values (true)$$,
    'results passed by name: the job completes'
);
select results_eq(
    $$select r.n, j.state, j.result from r inner join jobctl.job as j on r.job_id = j.job_id where r.n in (2, 5)
      order by r.n$$,
    $$values (2, 'completed', null::jsonb), (5, 'completed', '{"by": "name"}')$$,
    'NULL results keeps the result NULL; the named one is stored'
);
select results_eq(
    $$select completed from jobctl.complete_jobs(
        array(select job_id from r where n = 3), array(select lease_epoch from r where n = 3), array['"again"']::jsonb[])$$,
    $$values (false)$$,
    'completing again with a result: false'
);
select is(
    (
        select j.result from r inner join jobctl.job as j on r.job_id = j.job_id
        where r.n = 3
    ),
    '{"n": 3, "ok": true}'::jsonb,
    'and the first result stays'
);
select is_empty(
    $$select * from jobctl.complete_jobs(array[]::bigint[], array[]::bigint[], array[]::jsonb[])$$,
    'three empty arrays: no row'
);

select isnt(
    obj_description('jobctl.complete_jobs(bigint[], bigint[], jsonb[])'::regprocedure), null, 'complete_jobs has a comment'
);

select * from finish();
rollback;
