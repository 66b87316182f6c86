-- jobctl.next_fire_times: each fire time cron_next of the one before (the first after now), in a
-- time zone, count bounded 1 to 1,000 (tested at the bounds), and the errors of cron_next.
begin;
select plan(10);

select has_function(
    'jobctl', 'next_fire_times', array['text', 'integer', 'text'], 'next_fire_times(cron, count, time_zone) exists'
);

create temp table t as
select
    row_number() over () as n,
    at
from jobctl.next_fire_times('*/15 * * * *', 3);
select is((select count(*) from t), 3::bigint, 'count fire times');
select is(
    (
        select at from t
        where n = 1
    ),
    jobctl.cron_next('*/15 * * * *', now()),
    'the first after now'
);
select is(
    (select array_agg(b.at = jobctl.cron_next('*/15 * * * *', a.at)) from t as a inner join t as b on b.n = a.n + 1),
    array[true, true], 'each one cron_next of the one before'
);
select is((select count(*) from jobctl.next_fire_times('@daily')), 5::bigint, 'five by default');
select is(
    (select min(at) from jobctl.next_fire_times('30 2 * * *', 1, 'Asia/Kolkata')),
    jobctl.cron_next('30 2 * * *', now(), 'Asia/Kolkata'), 'read in the time zone'
);
select is((select count(*) from jobctl.next_fire_times('* * * * *', 1000)), 1000::bigint, '1,000: the bound');
select throws_ok(
    $$select * from jobctl.next_fire_times('* * * * *', 1001)$$, 'JC001',
    'count must be between 1 and 1000, not 1001', 'one past the bound'
);
select throws_ok(
    $$select * from jobctl.next_fire_times('* * * * *', 0)$$, 'JC001', 'count must be between 1 and 1000, not 0', '0'
);
select throws_like(
    $$select * from jobctl.next_fire_times('61 * * * *')$$, '%minute%', 'a bad expression: cron_next''s error'
);

select * from finish();
rollback;
