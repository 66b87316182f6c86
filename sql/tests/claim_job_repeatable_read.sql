-- jobctl.claim_job refuses isolation levels above READ COMMITTED (JC007): max_running and SKIP LOCKED
-- need a fresh snapshot per statement. The level must be set before the first query, hence its own file.
begin;
set transaction_isolation = 'repeatable read';
select plan(2);
select throws_ok(
    $$select * from jobctl.claim_job('tap_claim_rr', array['tap_claim_rrq'])$$,
    'JC007', 'claim_job needs READ COMMITTED isolation, not REPEATABLE READ',
    'claim_job under REPEATABLE READ: JC007'
);
select is(current_setting('transaction_isolation'), 'repeatable read', 'the test ran under REPEATABLE READ');
select * from finish();
rollback;
