-- jobctl.hint_window: the window in which a busy session sends one hint per queue (jobctl._notify),
-- which the worker reads to know how long to look again after a hint: 0.5 s, one home for both.
begin;
select plan(4);

select has_function('jobctl', 'hint_window', '{}'::name[], 'hint_window() exists');
select is(jobctl.hint_window(), 0.5::float8, 'half a second');
select volatility_is('jobctl', '_hint_window', '{}'::name[], 'immutable', 'immutable: _notify''s plan holds it as a constant');
select is(
    position('jobctl._hint_window()' in pg_get_functiondef('jobctl._notify(text[])'::regprocedure)) > 0,
    true,
    '_notify numbers its windows by hint_window'
);

select * from finish();
rollback;
