-- jobctl.job_actions: what a job in each state allows, read from jobctl._action_states, the rule the
-- actions themselves follow: a state job_actions offers an action in is one the action takes
-- (count_jobs counts it), and no other.
begin;
select plan(14);
\ir helpers.psql

select has_function('jobctl', 'job_actions', array['text'], 'job_actions(state) exists');

select is(jobctl.job_actions('waiting'), array['cancel'], 'waiting: cancel');
select is(jobctl.job_actions('pending'), array['cancel'], 'pending: cancel');
select is(jobctl.job_actions('running'), array['cancel'], 'running: cancel');
select is(jobctl.job_actions('failed'), array['retry', 'cancel'], 'failed: retry, cancel');
select is(jobctl.job_actions('dead'), array['retry', 'delete'], 'dead: retry, delete');
select is(jobctl.job_actions('cancelled'), array['retry', 'delete'], 'cancelled: retry, delete');
select is(jobctl.job_actions('completed'), array['delete'], 'completed: delete');

select throws_ok($$select jobctl.job_actions('done')$$, 'JC001', null, 'an unknown state is refused');
select throws_ok($$select jobctl.job_actions(null)$$, 'JC001', null, 'NULL is refused');

-- the actions follow the same rule: a job of each state (a queue each), counted by count_jobs for each action
select jobctl.put_tenant('tap_ja_t');
select jobctl.submit_job('tap_ja_t', 'tap_ja_pending', '{}');
select jobctl.submit_job('tap_ja_t', 'tap_ja_dead', '{}', max_attempts => 1);
select jobctl.fail_job(c.job_id, c.lease_epoch, 'boom') from jobctl.claim_job('tap_ja_w', array['tap_ja_dead'], 1) as c;
select jobctl.submit_job('tap_ja_t', 'tap_ja_failed', '{}', max_attempts => 2);
select jobctl.fail_job(c.job_id, c.lease_epoch, 'boom') from jobctl.claim_job('tap_ja_w', array['tap_ja_failed'], 1) as c;
select jobctl.submit_job('tap_ja_t', 'tap_ja_cancelled', '{}');
select jobctl.cancel_job(j.job_id) from jobctl.job as j
where j.tenant_id = 'tap_ja_t' and j.queue = 'tap_ja_cancelled';
select jobctl.submit_job('tap_ja_t', 'tap_ja_completed', '{}');
select jobctl.complete_job(c.job_id, c.lease_epoch) from jobctl.claim_job('tap_ja_w', array['tap_ja_completed'], 1) as c;
select jobctl.submit_job('tap_ja_t', 'tap_ja_running', '{}');
select from jobctl.claim_job('tap_ja_w', array['tap_ja_running'], 1);
select results_eq(
    $$select a.action, (select count(*) from jobctl.job as j
        where j.tenant_id = 'tap_ja_t' and a.action = any(jobctl.job_actions(j.state)))
      from unnest(array['retry', 'cancel', 'delete']) as a (action) order by 1$$,
    $$select a.action, (select c.jobs from jobctl.count_jobs('{"tenant_id": "tap_ja_t"}', a.action) as c)
      from unnest(array['retry', 'cancel', 'delete']) as a (action) order by 1$$,
    'count_jobs takes, for each action, exactly the jobs whose state offers it'
);
select is(
    pg_temp.error_of(
        $$select jobctl.retry_job((select j.job_id from jobctl.job as j
          where j.tenant_id = 'tap_ja_t' and j.state = 'completed'))$$
    ) like 'JC010%',
    true, 'retry_job refuses a completed job, whose state does not offer retry'
);
select is(
    pg_temp.error_of(
        $$select jobctl.cancel_job((select j.job_id from jobctl.job as j
          where j.tenant_id = 'tap_ja_t' and j.state = 'dead'))$$
    ) like 'JC010%',
    true, 'cancel_job refuses a dead job, whose state does not offer cancel'
);

select is(
    (
        select array_agg(distinct j.state order by j.state) from jobctl.job as j
        where j.tenant_id = 'tap_ja_t'
    ),
    array['cancelled', 'completed', 'dead', 'failed', 'pending', 'running'], 'the jobs are in six states'
);

select * from finish();
rollback;
