-- jobctl.await_event and jobctl.emit_event refuse isolation levels above READ COMMITTED (JC007): each
-- reads, after the event's lock, what the other committed, which needs a fresh snapshot per
-- statement. The level must be set before the first query, hence its own file.
begin;
set transaction_isolation = 'repeatable read';
select plan(2);
select throws_ok(
    $$select * from jobctl.await_event(1, 1, 'go')$$, 'JC007', 'await_event needs READ COMMITTED isolation, not REPEATABLE READ',
    'await_event under REPEATABLE READ: JC007'
);
select throws_ok(
    $$select jobctl.emit_event('tap_rr_t', 'go')$$, 'JC007', 'emit_event needs READ COMMITTED isolation, not REPEATABLE READ',
    'emit_event under REPEATABLE READ: JC007'
);
select * from finish();
rollback;
