-- A child waiting on a parent that delete_jobs or forget_subject erased: the
-- parent can never complete or be retried, so the child gets the end its policy names for a parent
-- that will not complete: cancelled, last_error 'cancelled: a job it depends on was deleted', its own
-- children following their policy; no edge points at the erased job. Tenant tap_er, queues tap_er_*.
begin;
select plan(14);
\ir helpers.psql

-- claim every due job of a queue and fail it for good (dead)
create function pg_temp.kill_all(p_queue text) returns integer
language plpgsql as $$
declare
    v record;
    v_n integer := 0;
begin
    loop
        select * into v from jobctl.claim_job('tap_er_w', array[p_queue], 1);
        exit when v.job_id is null;
        perform jobctl.fail_job(v.job_id, v.lease_epoch, 'boom', false);
        v_n := v_n + 1;
    end loop;
    return v_n;
end
$$;
create function pg_temp.state(p_job_id bigint) returns text
language sql as $$ select state || coalesce(': ' || last_error, '') from jobctl.job where job_id = p_job_id $$;
create function pg_temp.edges(p_ids bigint[]) returns bigint
language sql as $$
    select count(*) from jobctl._edge as e
    where e.parent_id = any(p_ids) or e.child_id = any(p_ids)
$$;

-- delete_jobs: a dead parent p, a child c under `wait` (and a second parent q, pending), and c's own
-- child g under `cancel`
create temp table er (k text, job_id bigint);
insert into er (k, job_id) select
    'p' as k,
    s.job_id
from jobctl.submit_job('tap_er', 'tap_er_p', '{}') as s;
insert into er (k, job_id) select
    'q' as k,
    s.job_id
from jobctl.submit_job('tap_er', 'tap_er_q', '{}') as s;
create function pg_temp.id(p_k text) returns bigint
language sql as $$ select er.job_id from er where er.k = p_k $$;
insert into er (k, job_id)
select
    'c' as k,
    s.job_id
from jobctl.submit_job(
    'tap_er', 'tap_er_c', '{}', depends_on => array[pg_temp.id('p'), pg_temp.id('q')], on_parent_failure => 'wait'
) as s;
insert into er (k, job_id)
select
    'g' as k,
    s.job_id
from jobctl.submit_job('tap_er', 'tap_er_c', '{}', depends_on => array[pg_temp.id('c')]) as s;

select is(pg_temp.kill_all('tap_er_p'), 1, 'p dies');
select is(pg_temp.state(pg_temp.id('c')), 'waiting', 'c waits on under wait, for a retry of p');
select is(
    (
        select d.acted from jobctl.delete_jobs('{"tenant_id": "tap_er", "queue": "tap_er_p", "state": "dead"}') as d
    ),
    1,
    'delete_jobs deletes the dead p'
);
select is(
    pg_temp.state(pg_temp.id('c')), 'cancelled: cancelled: a job it depends on was deleted',
    'c, waiting on the deleted p, is cancelled: p can never be retried'
);
select is(
    pg_temp.state(pg_temp.id('g')), 'cancelled: cancelled: a job it depends on was dead or cancelled',
    'c''s own child g (cancel) follows its policy'
);
select is(pg_temp.edges(array[pg_temp.id('p'), pg_temp.id('c'), pg_temp.id('g')]), 0::bigint, 'no edge is left');
select ok(
    not exists (
        select from jobctl._waiting as w
        where w.job_id in (pg_temp.id('c'), pg_temp.id('g'))
    ),
    'no _waiting row is left'
);
select is(pg_temp.state(pg_temp.id('q')), 'pending', 'the other parent q is untouched');

-- forget_subject: the subject's parent s is pending; its child under `cancel` (k1) is cancelled at
-- s's cancellation as before, its child under `wait` (k2) when s is erased
insert into er (k, job_id)
select
    's' as k,
    s.job_id
from jobctl.submit_job('tap_er', 'tap_er_s', '{}', subject_key => 'user-1') as s;
insert into er (k, job_id)
select
    'k1' as k,
    s.job_id
from jobctl.submit_job('tap_er', 'tap_er_k', '{}', depends_on => array[pg_temp.id('s')]) as s;
insert into er (k, job_id)
select
    'k2' as k,
    s.job_id
from jobctl.submit_job('tap_er', 'tap_er_k', '{}', depends_on => array[pg_temp.id('s')], on_parent_failure => 'wait') as s;
select is(
    (select f.deleted from jobctl.forget_subject('tap_er', 'user-1') as f), 1, 'forget_subject erases s'
);
select is(pg_temp.n_jobs('tap_er'), 5::bigint, 'and only s (q, c, g, k1, k2 are left)');
select is(
    pg_temp.state(pg_temp.id('k1')), 'cancelled: cancelled: a job it depends on was dead or cancelled',
    'k1 (cancel) is cancelled at s''s cancellation'
);
select is(
    pg_temp.state(pg_temp.id('k2')), 'cancelled: cancelled: a job it depends on was deleted',
    'k2 (wait), waiting on the erased s, is cancelled'
);
select is(pg_temp.edges(array[pg_temp.id('s'), pg_temp.id('k1'), pg_temp.id('k2')]), 0::bigint, 'no edge is left');
select is(
    (select count(*) from jobctl.retry_job(pg_temp.id('k2'))),
    1::bigint,
    'a retry of k2 runs it (its edges went when it was cancelled)'
);

select * from finish();
rollback;
