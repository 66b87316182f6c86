-- Dedup keys across a tenant's move: jobctl._move_out_delete keeps the keys of the
-- jobs it takes away (jobctl._move_key), jobctl._submit answers repeats of them as duplicates,
-- jobctl._move_out_keys hands the fenced source's keys over, jobctl._move_in_keys records them on the
-- target, jobctl._move_in_jobs and jobctl._move_in_end forget them, jobctl._move_out_finish clears
-- the source's; the tenant's role grants and API tokens come along (jobctl._move_out_begin,
-- _move_in_begin). One database plays both shards: the target's side runs under another tenant's
-- name. Tenants tap_mk_*.
begin;
select plan(28);

create role tap_mk_role;
create role tap_mk_gone;
select jobctl.grant_tenant('tap_mk_role', 'tap_mk_a');
select jobctl.grant_tenant('tap_mk_gone', 'tap_mk_a');
select jobctl.create_api_token('tap_mk_a', array['jobs:submit'], 'tap') is not null as token;

-- a finished holder, two pending ones and a running one
create temporary table tap_mk_job on commit drop as
select
    s.dedup_key,
    s.job_id
from (
    select
        'k0' as dedup_key,
        job_id
    from jobctl.submit_job('tap_mk_a', 'tap_mk_q0', '{}', dedup_key => 'k0')
    union all
    select
        'k1' as dedup_key,
        job_id
    from jobctl.submit_job('tap_mk_a', 'tap_mk_q', '{}', dedup_key => 'k1')
    union all
    select
        'k2' as dedup_key,
        job_id
    from jobctl.submit_job('tap_mk_a', 'tap_mk_q', '{}', dedup_key => 'k2')
    union all
    select
        'kr' as dedup_key,
        job_id
    from jobctl.submit_job('tap_mk_a', 'tap_mk_qr', '{}', dedup_key => 'kr')
) as s;
select jobctl.complete_job(c.job_id, c.lease_epoch) from jobctl.claim_job('w', array['tap_mk_q0'], 1) as c;
select count(*) from jobctl.claim_job('w', array['tap_mk_qr'], 1);
create function pg_temp.id(p_key text) returns bigint
language sql as $$ select job_id from tap_mk_job where dedup_key = p_key $$;

-- the source: a page taken and deleted
create temporary table tap_mk_config on commit drop as select jobctl._move_out_begin('tap_mk_a', 1) as c;
select is(
    (
        select jsonb_agg(g ->> 'role' order by g ->> 'role')
        from jsonb_array_elements((select c -> 'grants' from tap_mk_config)) as g
    ),
    '["tap_mk_gone", "tap_mk_role"]'::jsonb, 'begin: the tenant''s grants, by role name'
);
select is(
    jsonb_array_length((select c -> 'tokens' from tap_mk_config)), 1, 'begin: its API token (its hash)'
);
create temporary table tap_mk_page on commit drop as select jobctl._move_out_jobs('tap_mk_a', 0, 100) as p;
select is(
    jobctl._move_out_delete('tap_mk_a', array(
        select (j ->> 'job_id')::bigint from jsonb_array_elements((select p -> 'jobs' from tap_mk_page)) as j
    )), 2, 'the two pending holders are deleted here'
);
select is(
    (
        select array_agg(row(job_id, dedup_key, state)::text order by job_id) from jobctl._move_key
        where tenant_id = 'tap_mk_a'
    ),
    array[row(pg_temp.id('k1'), 'k1', 'pending')::text, row(pg_temp.id('k2'), 'k2', 'pending')::text],
    'and their keys are kept'
);
select is(
    jobctl._move_out_delete('tap_mk_a', array[pg_temp.id('k1')]), 0, 'delete again deletes nothing'
);
select is((
    select count(*) from jobctl._move_key
    where tenant_id = 'tap_mk_a'
), 2::bigint, 'and keeps no key twice');

-- repeats sent to the source during the copy
select is(
    (select row(job_id, duplicate)::text from jobctl.submit_job('tap_mk_a', 'tap_mk_q', '{}', dedup_key => 'k1')),
    row(pg_temp.id('k1'), true)::text, 'a repeat of a moved holder''s key answers it, a duplicate'
);
select is(
    (select array_agg(row(job_id, duplicate)::text) from jobctl.submit_jobs('[
        {"tenant_id": "tap_mk_a", "queue": "tap_mk_q", "payload": {}, "dedup_key": "k2"},
        {"tenant_id": "tap_mk_a", "queue": "tap_mk_q", "payload": {}, "dedup_key": "k1"},
        {"tenant_id": "tap_mk_a", "queue": "tap_mk_q", "payload": {}, "dedup_key": "kr"}
    ]')),
    array[row(pg_temp.id('k2'), true)::text, row(pg_temp.id('k1'), true)::text, row(pg_temp.id('kr'), true)::text],
    'a batch of repeats: moved holders and a holder still here'
);
select is(
    (select job_id = pg_temp.id(
        'k1') from jobctl.submit_job(
        'tap_mk_a', 'tap_mk_q', '{}', dedup_key => 'k1',
        dedup_states => array['completed']
    )), false,
    'dedup_states judge a moved holder by its state when it moved'
);
select is(
    (
        select count(*) from jobctl.job
        where tenant_id = 'tap_mk_a' and dedup_key in ('k1', 'k2', 'kr')
    ), 2::bigint,
    'no repeat made a job but that one'
);
delete from jobctl._ready
where job_id in (
    select job_id from jobctl.job
    where tenant_id = 'tap_mk_a' and dedup_key = 'k1'
);
delete from jobctl.job
where tenant_id = 'tap_mk_a' and dedup_key = 'k1';

-- the fence, then the keys still held here
select throws_ok(
    $$select jobctl._move_out_keys('tap_mk_a')$$, 'JC010', 'tenant tap_mk_a has no fenced move off this shard',
    'no keys before the fence'
);
select jobctl._move_out_fence('tap_mk_a');
select jobctl._move_out_fence('tap_mk_a');
select is(
    (select jsonb_agg(k ->> 'dedup_key') from jsonb_array_elements(jobctl._move_out_keys('tap_mk_a')) as k),
    '["kr"]'::jsonb, 'the keys held here: the running job''s (not the finished one''s, not the moved ones'')'
);
select is(
    (
        select count(*) from jobctl._tenant_lock
        where tenant_id = 'tap_mk_a' and name = 'dedup'
    ), 256::bigint,
    'every dedup bucket of the tenant was locked'
);
select throws_ok(
    $$select jobctl.submit_job('tap_mk_a', 'tap_mk_q', '{}', dedup_key => 'k9')$$, 'JC011',
    'tenant tap_mk_a has moved to shard 1', 'a keyed submit here is refused once fenced'
);
select throws_ok($$select jobctl._refuse_moved('tap_mk_a')$$, 'JC011', 'tenant tap_mk_a has moved to shard 1', 'the refusal');

-- the target, under the name tap_mk_b
select throws_ok(
    format('select jobctl._move_in_begin(%L)', jsonb_set(
        (select c from tap_mk_config), '{grants}', '[{"role": "tap_mk_nobody"}]'
    ) #- '{tokens}' || '{"tenant": {"tenant_id": "tap_mk_b"}}'),
    'JC010', 'tenant tap_mk_b is granted to roles this shard does not have: tap_mk_nobody',
    'a grant to a role the target lacks is refused'
);
select jobctl._move_in_begin(
    jsonb_set(
        jsonb_set((select c from tap_mk_config), '{tenant,tenant_id}', '"tap_mk_b"'),
        '{tokens,0,token_hash}', '"\\x00ff"'
    )
);
select is(
    (
        select array_agg(role_name::text order by role_name) from jobctl.list_tenant_grants()
        where tenant_id = 'tap_mk_b'
    ),
    array['tap_mk_gone', 'tap_mk_role'], 'the target holds the grants'
);
select is(
    (
        select array_agg(row(scopes, label, revoked_at is null)::text)
        from jobctl._api_token
        where
            tenant_id = 'tap_mk_b'
            and token_hash = '\x00ff'::bytea
    ),
    array[row(array['jobs:submit'], 'tap', true)::text], 'and the token'
);
select is(
    jobctl._move_in_keys('tap_mk_b', jsonb_build_array(
        jsonb_build_object(
            'job_id', 999999960, 'dedup_key', 'kr', 'state', 'running', 'created_at', now() - interval '1 minute'
        ),
        jsonb_build_object(
            'job_id', pg_temp.id('kr'), 'dedup_key', 'kx', 'state', 'running', 'created_at',
            (
                select created_at from jobctl.job
                where job_id = pg_temp.id('kr')
            )
        )
    )), 1, 'the source''s keys recorded, but for a job already here'
);
select is(
    (select row(job_id, duplicate)::text from jobctl.submit_job('tap_mk_b', 'tap_mk_q', '{}', dedup_key => 'kr')),
    row(999999960::bigint, true)::text, 'a repeat on the target answers the job on the source'
);
select is(
    (select duplicate from jobctl.submit_job(
        'tap_mk_b', 'tap_mk_q', '{}', dedup_key => 'kr',
        dedup_states => array['pending']
    )),
    false, 'by its state when handed over'
);
select is(
    (select row(job_id, duplicate)::text from jobctl.submit_job('tap_mk_b', 'tap_mk_q', '{}', dedup_key => 'kr')),
    (
        select row(max(job_id), true)::text from jobctl.job
        where tenant_id = 'tap_mk_b' and dedup_key = 'kr'
    ),
    'a newer job here holds the key after it'
);
select is(
    jobctl._move_in_jobs(jsonb_build_object('jobs', jsonb_build_array(
        (
            select to_jsonb(j) || '{"job_id": 999999960, "tenant_id": "tap_mk_b", "state": "failed"}' from jobctl.job as j
            where j.job_id = pg_temp.id('kr')
        )
    ), 'events', '[]'::jsonb)), 1, 'the drain brings the job'
);
select is(
    (
        select count(*) from jobctl._move_key
        where tenant_id = 'tap_mk_b'
    ), 0::bigint,
    'and its key row goes: the job holds its key here'
);
select
    jobctl._move_in_keys(
        'tap_mk_b', '[{"job_id": 999999896, "dedup_key": "ky", "state": "running", "created_at": "2026-01-01T00:00:00Z"}]'
    );
select is(jobctl._move_in_end('tap_mk_b'), 1, 'the end forgets the source''s keys');
select is(jobctl._move_in_end('tap_mk_a'), 0, 'but not those of a move off this shard');

-- the source finishes: its keys go
select jobctl.complete_job(r.job_id, r.lease_epoch) from jobctl._running as r
where r.tenant_id = 'tap_mk_a';
update jobctl._tenant_move set fenced_at = '-infinity'
where tenant_id = 'tap_mk_a';  -- settled
select is((jobctl._move_out_finish('tap_mk_a') ->> 'finished')::boolean, true, 'the source finishes');
select is((
    select count(*) from jobctl._move_key
    where tenant_id = 'tap_mk_a'
), 0::bigint, 'and forgets its keys');

select * from finish();
rollback;
