-- jobctl._hint_queue_limit: the NOTIFY queue's usage past which submits send no hint (jobctl._notify)
-- and jobctl doctor warns; the setting jobctl.hint_queue_limit, 0 to 1, anything else the default.
begin;
select plan(10);

create function pg_temp.limit_for(p_setting text) returns float8
language plpgsql as $$
begin
    perform set_config('jobctl.hint_queue_limit', p_setting, true);
    return jobctl._hint_queue_limit();
end
$$;

select is(jobctl._hint_queue_limit(), 0.5::float8, 'unset: half the queue');
select is(pg_temp.limit_for('0.1'), 0.1::float8, '0.1');
select is(pg_temp.limit_for(' .25 '), 0.25::float8, '.25, with spaces');
select is(pg_temp.limit_for('0'), 0::float8, '0 (the bound: a hint only while the queue is empty)');
select is(pg_temp.limit_for('1'), 1::float8, '1 (the bound: a hint until the queue is full)');
select is(pg_temp.limit_for('1.5'), 1::float8, 'over 1: 1');
select is(pg_temp.limit_for('-0.1'), 0.5::float8, 'negative: the default');
select is(pg_temp.limit_for('half'), 0.5::float8, 'not a number: the default');
select is(pg_temp.limit_for(''), 0.5::float8, 'empty: the default');
select is(
    pg_temp.limit_for('0.' || repeat('1', 100)), 0.5::float8, 'a number of over 15 decimals: the default'
);

select * from finish();
rollback;
