-- jobctl.slot_shares: a multi-shard worker's slots shared by the shards' claimable weights: 1 at
-- least each, adding up to the slots, in proportion otherwise (evenly when nothing is due; an
-- unknown weight counts as 0); fewer slots than shards refused. The fixed cases are the ones the
-- worker's Python shared the slots by before the database did (tests/test_shards.py).
begin;
select plan(16);
\ir helpers.psql

select has_function('jobctl', 'slot_shares', array['integer', 'double precision[]'], 'slot_shares(slots, weights) exists');
select volatility_is(
    'jobctl', 'slot_shares', array['integer', 'double precision[]'], 'immutable', 'pure: any shard answers alike'
);

select is(jobctl.slot_shares(4, array[1.0, 3.0]), array[1, 3], '1 : 3 weights, 4 slots: 1 and 3');
select is(jobctl.slot_shares(8, array[1.0, 3.0]), array[2, 6], '1 : 3 weights, 8 slots: 2 and 6');
select is(jobctl.slot_shares(4, array[1.0, 100.0]), array[1, 3], 'the floor of 1 a shard, and never more than the slots in all');
select is(jobctl.slot_shares(3, array[0, 0, 0]::float8[]), array[1, 1, 1], 'nothing due anywhere: evenly');
select is(jobctl.slot_shares(5, array[null, 2.0]::float8[]), array[1, 4], 'a shard that did not answer weighs nothing');
select is(jobctl.slot_shares(7, array[1.0, 1.0, 1.0]), array[3, 2, 2], 'a slot left over goes to the first of equal shortfalls');
select is(jobctl.slot_shares(1, array[5.0]), array[1], 'one shard: all the slots');

-- many random cases: each adds up to the slots with 1 at least a shard
select is(
    (
        select count(*) from (
            select
                c.slots,
                jobctl.slot_shares(c.slots, c.weights) as got
            from (
                select
                    n,
                    n + (random() * 60)::integer as slots,
                    array(
                        select case when random() < 0.2 then null when random() < 0.2 then 0 else random() * 10 end
                        from generate_series(1, n)
                        where g > 0
                    ) as weights
                from generate_series(1, 2000) as g, lateral (select 1 + (random() * 7)::integer as n) as x
            ) as c
        ) as r
        where (select sum(s) from unnest(r.got) as s) <> r.slots or (select min(s) from unnest(r.got) as s) < 1
    ),
    0::bigint,
    '2,000 random cases: each adds up to its slots, 1 at least a shard'
);

select is(
    pg_temp.error_of($$select jobctl.slot_shares(1, array[1.0, 1.0])$$),
    'JC001: slots (1) must be at least the 2 shards: each needs a slot (field: slots)',
    'fewer slots than shards are refused'
);
select is(
    pg_temp.hint_of($$select jobctl.slot_shares(1, array[1.0, 1.0])$$),
    'Give the worker at least as many slots (--concurrency) as shards (--dsn).',
    'the refusal says what to do'
);
select
    throws_ok(
        $$select jobctl.slot_shares(0, array[1.0])$$, 'JC001', 'slots must be between 1 and 1000, not 0', 'slots 0 refused'
    );
select throws_ok($$select jobctl.slot_shares(1001, array[1.0])$$, 'JC001', null, 'over 1,000 slots refused');
select
    throws_ok(
        $$select jobctl.slot_shares(4, '{}'::float8[])$$, 'JC001', 'weights must hold one weight a shard', 'no weights refused'
    );
select throws_ok(
    $$select jobctl.slot_shares(4, array[1.0, -1.0])$$, 'JC001', 'weights must be finite and not negative (NULL: unknown)',
    'a negative weight refused'
);

select * from finish();
rollback;
