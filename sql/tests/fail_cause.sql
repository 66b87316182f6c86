-- jobctl.fail_job's cause (jobctl._failure): timed_out writes the reaper's message and retries after
-- the backoff, whatever error the caller passes; refused is dead at once with the error kept; NULL is
-- the handler's failure. Tenant tap_fc_t, queues tap_fc_*.
begin;
select plan(11);
set local jit = off;
\ir helpers.psql

create function pg_temp.fail_next(p_queue text, p_error text, p_cause text, p_retryable boolean default true)
returns table (job_id bigint, state text)
language plpgsql as $$
declare
    v_claim record;
begin
    select * into strict v_claim from jobctl.claim_job('tap_fc_w', array[p_queue]);
    return query select v_claim.job_id,
        jobctl.fail_job(v_claim.job_id, v_claim.lease_epoch, p_error, p_retryable, cause => p_cause);
end
$$;

select jobctl.submit_job(
    'tap_fc_t', 'tap_fc_to', '{}', max_attempts => 3,
    backoff => '{"strategy": "fixed", "base": "1 hour", "jitter": false}'
);
create temp table to_ as select * from pg_temp.fail_next('tap_fc_to', 'timed out after 5s', 'timed_out');
select is((select state from to_), 'failed', 'timed_out with attempts left: failed');
select is(
    (select j.last_error from to_ cross join pg_temp.job(to_.job_id) as j), 'timed out: ran past its timeout',
    'the reaper''s message, not the caller''s'
);
select is(
    (select j.run_at > now() + interval '59 minutes' from to_ cross join pg_temp.job(to_.job_id) as j), true,
    'retried after the backoff (as the reaper retries a timed-out job)'
);
select is(
    (select e.detail from to_ inner join jobctl._event as e on e.job_id = to_.job_id and e.event = 'failed'),
    'timed out: ran past its timeout', 'the history says so too'
);

select jobctl.submit_job('tap_fc_t', 'tap_fc_ref', '{}', max_attempts => 3);
create temp table ref as select * from pg_temp.fail_next('tap_fc_ref', 'payload could not be decoded: x', 'refused');
select is((select state from ref), 'dead', 'refused: dead at once with attempts left');
select is(
    (select j.last_error from ref cross join pg_temp.job(ref.job_id) as j), 'payload could not be decoded: x',
    'the error kept'
);

select jobctl.submit_job('tap_fc_t', 'tap_fc_h', '{}', max_attempts => 3);
select jobctl.submit_job('tap_fc_t', 'tap_fc_p', '{}', max_attempts => 3);
select
    is(
        (select state from pg_temp.fail_next('tap_fc_h', 'KeyError: 1', null)),
        'failed',
        'no cause: the handler''s failure, retried'
    );
select
    is(
        (select state from pg_temp.fail_next('tap_fc_p', 'PermanentError: no', null, false)),
        'dead',
        'no cause, retryable false: dead'
    );

select throws_ok(
    $$select jobctl.fail_job(1, 1, 'x', cause => 'lease_expired')$$, 'JC001',
    'cause must be timed_out, refused or NULL, not lease_expired', 'the reaper''s own cause is not a caller''s'
);
select is(
    pg_temp.error_of($$select jobctl.fail_job(1, 1, 'x', cause => 'nope')$$),
    'JC001: cause must be timed_out, refused or NULL, not nope (field: cause)', 'an unknown cause names the field'
);
select is(jobctl.fail_job(-1, 1, null, cause => 'timed_out'), null, 'fenced as ever: NULL');

select * from finish();
rollback;
