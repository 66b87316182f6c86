-- Submit and claim rates: token buckets (sequences) taken by submit_job/submit_jobs and claim_job;
-- over the rate is JC005 with `retry_after: <s>` on its own DETAIL line and nothing written; a
-- repeat of a dedup key is answered even over the rate. Tenants tap_rate_*. (Concurrency:
-- tests/test_tenant_limits.py.)
begin;
select plan(19);

create function pg_temp.jobs(p_tenant text)
returns bigint
language sql as $$
    select count(*) from jobctl.job where tenant_id = p_tenant
$$;

select jobctl.put_tenant('tap_rate_a', submit_rate => 5, submit_burst => 3);
select isnt((
    select submit_bucket from jobctl.tenant
    where tenant_id = 'tap_rate_a'
), null, 'a submit rate gets a bucket');
select is((
    select claim_bucket from jobctl.tenant
    where tenant_id = 'tap_rate_a'
), null, 'no claim rate: no claim bucket');

select is(
    (select count(*) from jobctl.submit_jobs($$[
        {"tenant_id": "tap_rate_a", "queue": "tap_rate_q", "payload": {}},
        {"tenant_id": "tap_rate_a", "queue": "tap_rate_q", "payload": {}},
        {"tenant_id": "tap_rate_a", "queue": "tap_rate_q", "payload": {}, "dedup_key": "k"}
    ]$$)),
    3::bigint, 'a full bucket takes a burst at once'
);
select throws_ok(
    $$select jobctl.submit_job('tap_rate_a', 'tap_rate_q', '{}')$$, 'JC005',
    'tenant tap_rate_a is over its submit rate (5 a second)', 'the next submit is over the rate: JC005'
);
do $$
begin
    perform jobctl.submit_job('tap_rate_a', 'tap_rate_q', '{}');
exception when sqlstate 'JC005' then
    declare
        v_detail text;
    begin
        get stacked diagnostics v_detail = pg_exception_detail;
        create temp table over_rate_detail as select v_detail as detail;
    end;
end
$$;
select matches(
    (select detail from over_rate_detail), E'(^|\\n)retry_after: 0\\.[0-9]+($|\\n)',
    'its DETAIL has a retry_after line with the seconds to wait (under one token at 5 a second)'
);
select is(pg_temp.jobs('tap_rate_a'), 3::bigint, 'nothing was written over the rate');
select is(
    (select duplicate from jobctl.submit_job('tap_rate_a', 'tap_rate_q', '{}', dedup_key => 'k')), true,
    'a repeat of a dedup key is answered over the rate'
);
select throws_ok(
    $$select count(*) from jobctl.submit_jobs('[
        {"tenant_id": "tap_rate_a", "queue": "q", "payload": {}}, {"tenant_id": "tap_rate_a", "queue": "q", "payload": {}},
        {"tenant_id": "tap_rate_a", "queue": "q", "payload": {}}, {"tenant_id": "tap_rate_a", "queue": "q", "payload": {}}
    ]')$$,
    'JC001', '4 new jobs for tenant tap_rate_a are more than its submit burst', 'a batch over the burst can never pass: JC001'
);
select pg_sleep(0.25);
select lives_ok($$select jobctl.submit_job('tap_rate_a', 'tap_rate_q', '{}')$$, 'a token accrues in 1/rate seconds');
select is(pg_temp.jobs('tap_rate_a'), 4::bigint, 'and that submit wrote its job');

-- a new rate keeps the bucket (its level, in microseconds) and changes a token's cost
create temp table bucket_before as
select submit_bucket from jobctl.tenant
where tenant_id = 'tap_rate_a';
select jobctl.put_tenant('tap_rate_a', submit_rate => 10, submit_burst => 3);
create temp table bucket_after as
select
    t.submit_bucket,
    s.seqincrement
from jobctl.tenant as t
inner join pg_sequence as s on t.submit_bucket = s.seqrelid
where t.tenant_id = 'tap_rate_a';
select is((select submit_bucket from bucket_after), (select submit_bucket from bucket_before), 'a new rate keeps the bucket');
select is(
    (select seqincrement from bucket_after), 100000::bigint,
    'its increment is the new cost of a token: 100,000 us at 10 a second'
);

-- a tenant without rates is never held back
select lives_ok(
    $$select count(*) from jobctl.submit_jobs((
        select jsonb_agg(jsonb_build_object('tenant_id', 'tap_rate_b', 'queue', 'tap_rate_q', 'payload', '{}'::jsonb))
        from generate_series(1, 100)
    ))$$,
    'no rate: 100 at once'
);

-- claim rate: 2 a second, burst 2
select jobctl.put_tenant('tap_rate_c', claim_rate => 2, claim_burst => 2);
select count(*) from jobctl.submit_jobs((
    select jsonb_agg(jsonb_build_object('tenant_id', 'tap_rate_c', 'queue', 'tap_rate_cq', 'payload', '{}'::jsonb))
    from generate_series(1, 6)
));
select is((select count(*) from jobctl.claim_job('w', array['tap_rate_cq'], 10)), 2::bigint, 'a claim takes the burst');
select is((select count(*) from jobctl.claim_job('w', array['tap_rate_cq'], 10)), 0::bigint, 'then nothing');
select pg_sleep(0.55);
select is((select count(*) from jobctl.claim_job('w', array['tap_rate_cq'], 10)), 1::bigint, 'one token after half a second');

-- dropping the rate drops the bucket
select jobctl.put_tenant('tap_rate_a');
select is((
    select submit_bucket from jobctl.tenant
    where tenant_id = 'tap_rate_a'
), null, 'no rate: no bucket');
select is(
    (
        select count(*) from pg_class
        where relname like '\_submit\_bucket\_' || substr(md5('tap_rate_a'), 1, 20)
    ),
    0::bigint, 'its sequence is gone'
);
select lives_ok(
    $$select count(*) from jobctl.submit_jobs((
        select jsonb_agg(jsonb_build_object('tenant_id', 'tap_rate_a', 'queue', 'tap_rate_q', 'payload', '{}'::jsonb))
        from generate_series(1, 10)
    ))$$,
    'without its rate, the tenant submits freely'
);

select * from finish();
rollback;
