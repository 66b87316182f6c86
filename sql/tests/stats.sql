-- jobctl.stats: jobs per tenant, queue and state, with the run_at of the oldest due job;
-- optional tenant and queue filters. Tenants tap_stats_*, queues tap_stats_*.
begin;
select plan(12);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'stats', array['text', 'text'], 'stats(tenant_id, queue) exists');

-- tap_stats_t1, queue qa: pending x2 (one an hour late, one delayed), running, completed;
-- queue qb: failed (waiting), dead, cancelled. tap_stats_t2, queue qa: one pending.
do $do$
begin
    perform jobctl.submit_job('tap_stats_t1', 'tap_stats_qa', '{"p": "late"}', run_at => now() - interval '1 hour');
    perform jobctl.submit_job('tap_stats_t1', 'tap_stats_qa', '{"p": "delayed"}', run_at => now() + interval '1 hour');
    perform jobctl.submit_job('tap_stats_t1', 'tap_stats_qa', '{"p": "run"}', priority => 9);
    perform jobctl.submit_job('tap_stats_t1', 'tap_stats_qa', '{"p": "done"}', priority => 8);
    perform jobctl.submit_job(
        'tap_stats_t1', 'tap_stats_qb', '{"p": "fail"}', priority => 9,
        backoff => '{"strategy": "fixed", "base": "10 minutes", "jitter": false}'
    );
    perform jobctl.submit_job('tap_stats_t1', 'tap_stats_qb', '{"p": "dead"}', priority => 8, max_attempts => 1);
    perform jobctl.submit_job('tap_stats_t1', 'tap_stats_qb', '{"p": "cancel"}', priority => 7);
    perform jobctl.submit_job('tap_stats_t2', 'tap_stats_qa', '{}');
end
$do$;
-- claims draw lanes (queue, tenant) by weight: keep tap_stats_t2 out of them for now
update jobctl.tenant set paused = true
where tenant_id = 'tap_stats_t2';
create temp table c_qa as
select * from jobctl.claim_job('tap_stats_w', array['tap_stats_qa'], 1);
create temp table c_qa2 as
select * from jobctl.claim_job('tap_stats_w', array['tap_stats_qa'], 1);
create temp table c_qb as
select * from jobctl.claim_job('tap_stats_w', array['tap_stats_qb'], 1);
create temp table c_qb2 as
select * from jobctl.claim_job('tap_stats_w', array['tap_stats_qb'], 1);
update jobctl.tenant set paused = false
where tenant_id = 'tap_stats_t2';
select results_eq(
    $$select payload ->> 'p' from c_qa union all select payload ->> 'p' from c_qa2
      union all select payload ->> 'p' from c_qb union all select payload ->> 'p' from c_qb2$$,
    $$values ('run'), ('done'), ('fail'), ('dead')$$,
    'the claims took tap_stats_t1''s jobs by priority'
);
select ok((select jobctl.complete_job(job_id, lease_epoch) from c_qa2), 'done completes');
select is((select jobctl.fail_job(job_id, lease_epoch, 'x') from c_qb), 'failed', 'fail fails');
select is((select jobctl.fail_job(job_id, lease_epoch, 'x') from c_qb2), 'dead', 'dead dies');
select is(
    (select jobctl.cancel_job(j.job_id) from jobctl.list_jobs('tap_stats_t1', 'pending', 'tap_stats_qb') as j),
    'cancelled', 'cancel is cancelled'
);

create temp table expected (tenant_id text, queue text, state text, jobs bigint, oldest_run_at timestamptz);
insert into expected (tenant_id, queue, state, jobs, oldest_run_at) values
('tap_stats_t1', 'tap_stats_qa', 'completed', 1, null),
('tap_stats_t1', 'tap_stats_qa', 'pending', 2, now() - interval '1 hour'),
('tap_stats_t1', 'tap_stats_qa', 'running', 1, null),
('tap_stats_t1', 'tap_stats_qb', 'cancelled', 1, null),
('tap_stats_t1', 'tap_stats_qb', 'dead', 1, null),
('tap_stats_t1', 'tap_stats_qb', 'failed', 1, null),
('tap_stats_t2', 'tap_stats_qa', 'pending', 1, now());

select results_eq(
    $$select * from jobctl.stats('tap_stats_t1')$$,
    $$select * from expected where tenant_id = 'tap_stats_t1' order by 1, 2, 3$$,
    'one tenant: a row per queue and state with counts; the oldest due run_at on the pending row only'
);
select results_eq(
    $$select * from jobctl.stats('tap_stats_t1', 'tap_stats_qb')$$,
    $$select * from expected where tenant_id = 'tap_stats_t1' and queue = 'tap_stats_qb' order by 1, 2, 3$$,
    'one tenant and queue'
);
select results_eq(
    $$select * from jobctl.stats(queue => 'tap_stats_qa')$$,
    $$select * from expected where queue = 'tap_stats_qa' order by 1, 2, 3$$,
    'one queue, every tenant'
);
select results_eq(
    $$select * from jobctl.stats() where tenant_id like 'tap\_stats\_%'$$,
    $$select * from expected order by 1, 2, 3$$,
    'no filter: every tenant and queue (ours among them)'
);
select is_empty($$select * from jobctl.stats('tap_stats_nobody')$$, 'an unknown tenant: no rows');

select isnt(obj_description('jobctl.stats(text, text)'::regprocedure), null, 'stats has a comment');

select * from finish();
rollback;
