-- jobctl._pick: the "pick" step of claim_job, fair shares by systematic sampling, tested with arrays
-- alone (it reads no table).
begin;
select plan(14);

select
    has_function(
        'jobctl',
        '_pick',
        array['double precision[]', 'double precision', 'integer[]', 'integer', 'double precision'],
        '_pick exists'
    );
select
    volatility_is(
        'jobctl',
        '_pick',
        array['double precision[]', 'double precision', 'integer[]', 'integer', 'double precision'],
        'immutable',
        'it reads nothing: immutable'
    );

-- three lanes as wide as 1, 1 and 2: eight points from offset 0.5 fall 2, 2, 4
select is(
    jobctl._pick('{0,1,2}', 4, '{}', 8, 0.5),
    row('{1,2,3}', '{2,2,4}', '{2,2,4}', false)::jobctl._picks,
    'eight points on lanes 1:1:2 give 2, 2 and 4 jobs (wanted = n, not rated)'
);

-- every offset: the points add up to n, and each lane gets its exact share to within one job
select is(
    (
        select count(*)::integer from generate_series(0, 199) as o (o)
        cross join lateral (select jobctl._pick('{0,1,3.5}', 7, '{}', 10, o.o / 200.0) as p) as x
        where (select sum(n) from unnest((x.p).n) as n) <> 10
    ),
    0, 'for 200 offsets the picks add up to max_jobs'
);
select is(
    (
        select count(*)::integer from generate_series(0, 199) as o (o)
        cross join lateral (select jobctl._pick('{0,1,3.5}', 7, '{}', 10, o.o / 200.0) as p) as x
        cross join lateral unnest((x.p).lanes, (x.p).n) as u (lane, n)
        where abs(u.n - 10 * (array[1, 2.5, 3.5])[u.lane] / 7) >= 1
    ),
    0, 'and every lane gets within one job of n * width / total'
);

-- one point: a lane is picked as often as its width says, over evenly spread offsets
select results_eq(
    $$select (x.p).lanes[1], count(*)::integer
      from generate_series(0, 999) as o (o)
      cross join lateral (select jobctl._pick('{0,1,2}', 4, '{}', 1, (o.o + 0.5) / 1000.0) as p) as x
      group by 1 order by 1$$,
    $$values (1, 250), (2, 250), (3, 500)$$,
    'a single job picks each lane with probability width / total'
);

-- skipped lanes are out of play; the rest are laid end to end again, keeping their numbers
select is(
    jobctl._pick('{0,1,2}', 4, '{3}', 8, 0.5),
    row('{1,2}', '{4,4}', '{4,4}', false)::jobctl._picks,
    'with lane 3 skipped, its points go to lanes 1 and 2'
);
select is(
    jobctl._pick('{0,1,2}', 4, '{1,3}', 5, 0.3),
    row('{2}', '{5}', '{5}', false)::jobctl._picks,
    'a lone lane left in play gets every point, under its own number'
);
select is(
    jobctl._pick('{0}', 1, '{}', 7, 0.9),
    row('{1}', '{7}', '{7}', false)::jobctl._picks,
    'a lone lane gets every point'
);
select ok(
    (jobctl._pick('{0,1,2}', 4, '{3,1,2}', 5, 0.3)).lanes is null,
    'every lane skipped: nothing in play (no lanes picked)'
);
select ok(
    (jobctl._pick('{}', 0, '{}', 5, 0.3)).lanes is null,
    'no lanes: nothing in play'
);
select is(
    jobctl._pick('{0,1,2}', 4, '{2,2}', 4, 0.5),
    row('{1,3}', '{1,3}', '{1,3}', false)::jobctl._picks,
    'a lane skipped twice is skipped once'
);

-- many lanes, few points: no lane gets more than its share rounded up
select is(
    (
        select max(n) from unnest((jobctl._pick(
            array(select g::float8 from generate_series(0, 999) as g), 1000, '{}', 200, 0.123
        )).n) as n
    ),
    1, '200 points on 1,000 equal lanes: at most one each'
);
select is(
    cardinality((jobctl._pick(array(select g::float8 from generate_series(0, 999) as g), 1000, '{}', 200, 0.123)).lanes),
    200, 'and 200 lanes picked'
);

select * from finish();
rollback;
