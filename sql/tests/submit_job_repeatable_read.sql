-- jobctl.submit_job / submit_jobs under REPEATABLE READ: a dedup_key cannot be honoured there (the
-- snapshot would hide a concurrent winner), so it is refused with JC006; jobs without a key are fine.
-- A file of its own because the isolation level is fixed when the transaction starts.
begin;
set transaction_isolation = 'repeatable read';
select plan(6);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select is(current_setting('transaction_isolation'), 'repeatable read', 'this file runs under REPEATABLE READ');
select throws_ok(
    $$select jobctl.submit_job('tap_submit_rr', 'tap_submit_rr_q', '{}', dedup_key => 'k')$$,
    'JC006', 'dedup_key needs READ COMMITTED or SERIALIZABLE isolation, not REPEATABLE READ',
    'submit_job with a dedup_key under REPEATABLE READ: JC006'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_submit_rr", "queue": "tap_submit_rr_q", "payload": {}},
        {"tenant_id": "tap_submit_rr", "queue": "tap_submit_rr_q", "payload": {}, "dedup_key": "k"}]')$$,
    'JC006', null,
    'submit_jobs with a dedup_key in any element under REPEATABLE READ: JC006'
);
select is_empty(
    $$select 1 from jobctl.job where tenant_id = 'tap_submit_rr'$$,
    'nothing is written'
);
select lives_ok(
    $$select jobctl.submit_job('tap_submit_rr', 'tap_submit_rr_q', '{}')$$,
    'submit_job without a dedup_key works under REPEATABLE READ'
);
select results_eq(
    $$select count(*) from jobctl.job where tenant_id = 'tap_submit_rr'$$, $$values (1::bigint)$$,
    'and writes its job'
);

select * from finish();
rollback;
