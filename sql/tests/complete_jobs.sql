-- jobctl.complete_jobs: a batch of completions, one row per input in input order, completed = false
-- where fenced. Tenant tap_completes_t, queue tap_completes_q; every claim names its queue.
begin;
select plan(15);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function(
    'jobctl', 'complete_jobs', array['bigint[]', 'bigint[]'], 'complete_jobs(job_ids, lease_epochs) exists'
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
    'JC001', 'job_ids, lease_epochs (and results, when given) must be arrays of the same length', 'arrays of different lengths: JC001'
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

select isnt(
    obj_description('jobctl.complete_jobs(bigint[], bigint[])'::regprocedure), null, 'complete_jobs has a comment'
);

select * from finish();
rollback;
