-- jobctl.pause_tenant: a paused tenant's jobs are not claimed, at once (the shared lane lists are
-- emptied), while its submits go on; resuming lets them be claimed again. Tenants tap_pause_*.
begin;
select plan(9);

select has_function('jobctl', 'pause_tenant', array['text', 'boolean'], 'pause_tenant(tenant_id, paused) exists');

select count(*) from jobctl.submit_jobs((
    select jsonb_agg(jsonb_build_object('tenant_id', t, 'queue', 'tap_pause_q', 'payload', '{}'::jsonb))
    from unnest(array['tap_pause_a', 'tap_pause_a', 'tap_pause_a', 'tap_pause_b', 'tap_pause_b']) as t
));
-- a claim fills the shared lane list with both tenants' lanes
select is(
    (select count(*) from jobctl.claim_job('w', array['tap_pause_q'], 2)), 2::bigint, 'both tenants are claimable'
);

select is(jobctl.pause_tenant('tap_pause_a'), true, 'pausing a running tenant changes it');
select is(jobctl.pause_tenant('tap_pause_a'), false, 'pausing it again changes nothing');
select is(
    (select array_agg(distinct tenant_id) from jobctl.claim_job('w', array['tap_pause_q'], 10)), array['tap_pause_b'],
    'the very next claim takes only the other tenant''s jobs'
);
select lives_ok(
    $$select jobctl.submit_job('tap_pause_a', 'tap_pause_q', '{}')$$, 'a paused tenant still submits'
);
select is(jobctl.pause_tenant('tap_pause_a', false), true, 'resuming changes it');
select cmp_ok(
    (select count(*) from jobctl.claim_job('w', array['tap_pause_q'], 10)), '>=', 2::bigint,
    'after resuming its jobs are claimed again'
);
select throws_ok($$select jobctl.pause_tenant('tap_pause_nobody')$$, 'P0002', 'no tenant tap_pause_nobody', 'an unknown tenant');

select * from finish();
rollback;
