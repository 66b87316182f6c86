-- jobctl._cap: the "cap" step of claim_job: max_running and claim rates cut each picked lane's
-- share, a tenant's room shared by its lanes in lane order. (A tenant another claimer holds gives
-- nothing: tests/test_concurrency.py, with real concurrent claimers.) Tenants tap_cap_*.
begin;
select plan(12);
set local jit = off;

select has_function('jobctl', '_cap', array['text[]', 'text[]', 'boolean[]', 'jobctl._picks'], '_cap exists');

select jobctl.put_tenant('tap_cap_free');
select jobctl.put_tenant('tap_cap_run', max_running => 3);
select jobctl.put_tenant('tap_cap_rate', claim_rate => 1, claim_burst => 4);

-- one running job of tap_cap_run: room 2
select jobctl.submit_job('tap_cap_run', 'tap_cap_q', '{}');
select count(*) from jobctl.claim_job('tap_cap_w', array['tap_cap_q']);

select is(
    jobctl._cap(
        '{tap_cap_q,tap_cap_q}', '{tap_cap_free,tap_cap_free}', '{f,f}', row('{1,2}', '{3,4}', '{3,4}', false)::jobctl._picks
    ),
    row('{1,2}', '{3,4}', '{3,4}', false)::jobctl._picks,
    'no limited lane: the picks as they are'
);
select is(
    (jobctl._cap('{tap_cap_q}', '{tap_cap_run}', '{t}', row('{1}', '{5}', '{5}', false)::jobctl._picks)).n,
    '{2}', 'max_running 3 with one running: a lane that wants 5 gets 2'
);
select is(
    (jobctl._cap(
        '{tap_cap_q,tap_cap_q,tap_cap_q}', '{tap_cap_free,tap_cap_run,tap_cap_run}', '{f,t,t}',
        row('{1,2,3}', '{4,1,4}', '{4,1,4}', false)::jobctl._picks
    )).n,
    '{4,1,1}', 'the room is shared by the tenant''s lanes in lane order; other lanes are not cut'
);
select is(
    (
        jobctl._cap(
            '{tap_cap_q,tap_cap_q}', '{tap_cap_run,tap_cap_run}', '{t,t}', row('{1,2}', '{2,3}', '{2,3}', false)::jobctl._picks
        )
    ).wanted,
    '{2,3}', 'what was wanted is kept (lanes cut leave play)'
);
select is(
    jobctl._cap('{tap_cap_q}', '{tap_cap_rate}', '{t}', row('{1}', '{10}', '{10}', false)::jobctl._picks),
    row('{1}', '{10}', '{4}', true)::jobctl._picks,
    'a claim rate with a burst of 4: 4 of 10, and the picks are rated'
);
select is(
    (
        jobctl._cap(
            '{tap_cap_q,tap_cap_q}', '{tap_cap_rate,tap_cap_free}', '{t,f}', row('{2}', '{3}', '{3}', false)::jobctl._picks
        )
    ).rated,
    false, 'only picked lanes count: an unpicked rated lane leaves the picks unrated'
);

-- running at max_running: nothing, and a tenant past it (max_running lowered) nothing either
select jobctl.submit_job('tap_cap_run', 'tap_cap_q', '{}') from generate_series(1, 3);
select count(*) from jobctl.claim_job('tap_cap_w', array['tap_cap_q'], 5);
select is(
    (jobctl._cap('{tap_cap_q}', '{tap_cap_run}', '{t}', row('{1}', '{5}', '{5}', false)::jobctl._picks)).n,
    '{0}', 'at max_running: nothing'
);
select jobctl.put_tenant('tap_cap_run', max_running => 1);
select is(
    (jobctl._cap('{tap_cap_q}', '{tap_cap_run}', '{t}', row('{1}', '{5}', '{5}', false)::jobctl._picks)).n,
    '{0}', 'past max_running: nothing, never a negative share'
);

-- a queue's max_running and claim rate cap the lanes of every tenant in it, shared in lane order
select jobctl.put_queue('tap_cap_lq', max_running => 3);
select jobctl.submit_job('tap_cap_free', 'tap_cap_lq', '{}');
select count(*) from jobctl.claim_job('tap_cap_w', array['tap_cap_lq']);
select is(
    (jobctl._cap(
        '{tap_cap_lq,tap_cap_lq}', '{tap_cap_free,tap_cap_other}', '{t,t}',
        row('{1,2}', '{1,5}', '{1,5}', false)::jobctl._picks
    )).n,
    '{1,1}', 'a queue with max_running 3 and one running: 2 left, for its lanes in order'
);
select jobctl.put_queue('tap_cap_rq', claim_rate => 1, claim_burst => 2);
select is(
    jobctl._cap('{tap_cap_rq}', '{tap_cap_free}', '{t}', row('{1}', '{5}', '{5}', false)::jobctl._picks),
    row('{1}', '{5}', '{2}', true)::jobctl._picks,
    'a queue''s claim rate with a burst of 2: 2 of 5, rated'
);
select is(
    (jobctl._cap('{tap_cap_rq}', '{tap_cap_run}', '{t}', row('{1}', '{5}', '{5}', false)::jobctl._picks)).n,
    '{0}', 'a lane gets the smaller of its tenant''s and its queue''s room (the tenant is full)'
);

select * from finish();
rollback;
