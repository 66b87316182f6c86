-- jobctl.archived_job and open_archived_payload: the object archive's files (jobctl.archive_manifest) that may
-- hold a job, by id range, of the caller's tenants only, with the subject keys awaiting erasure; and
-- forget_subject's erasure request. Tenants tap_arch_a, tap_arch_b; manifest rows only (no files).
begin;
select plan(14);

select has_function('jobctl', 'archived_job', array['bigint'], 'archived_job(job_id) exists');
select isnt(obj_description('jobctl.archived_job(bigint)'::regprocedure), null, 'archived_job has a comment');

insert into jobctl.archive_manifest (tenant_id, job_day, url, job_count, bytes, min_job_id, max_job_id, sha256) values
('tap_arch_a', '2026-01-01', 'file:///tap/a1', 10, 100, 900000000001, 900000000010, repeat('a', 64)),
('tap_arch_a', '2026-01-02', 'file:///tap/a2', 10, 100, 900000000011, 900000000020, repeat('b', 64)),
('tap_arch_b', '2026-01-01', 'file:///tap/b1', 10, 100, 900000000005, 900000000015, repeat('c', 64));

select results_eq(
    $$select url, tenant_id, day, bytes from jobctl.archived_job(900000000007)$$,
    $$values ('file:///tap/a1', 'tap_arch_a', '2026-01-01'::date, 100::bigint),
        ('file:///tap/b1', 'tap_arch_b', '2026-01-01'::date, 100::bigint)$$,
    'every file whose id range holds the id, oldest day first'
);
select results_eq(
    $$select url from jobctl.archived_job(900000000010)$$, $$values ('file:///tap/a1'), ('file:///tap/b1')$$,
    'the range includes its bounds'
);
select is_empty($$select * from jobctl.archived_job(900000000021)$$, 'an id outside every range: zero rows');
select is_empty($$select * from jobctl.archived_job(null)$$, 'a NULL id: zero rows');
select results_eq(
    $$select forgotten from jobctl.archived_job(900000000001)$$, $$values ('{}'::text[])$$,
    'no erasure pending: no keys'
);

-- forget_subject asks for the files' erasure of a tenant that has files
select results_eq(
    $$select * from jobctl.forget_subject('tap_arch_a', 'user-1')$$, $$values (0, 0)$$,
    'forget_subject: nothing in the database'
);
select results_eq(
    $$select url, forgotten from jobctl.archived_job(900000000007)$$,
    $$values ('file:///tap/a1', array['user-1']), ('file:///tap/b1', '{}'::text[])$$,
    'the key awaits its erasure in that tenant''s files only'
);

-- a sealed payload read from a file opens with the caller's key, as get_job opens one
select set_config('jobctl.payload_keys', '{"tap_arch_a": "tap-archive-key-0123456789abcdef"}', true);
select is(
    jobctl.open_archived_payload('tap_arch_a', '{"x": 1}'), '{"x": 1}'::jsonb, 'a plain payload: unchanged'
);
select is(
    jobctl.open_archived_payload('tap_arch_a', jobctl._seal('{"x": 2}', 'tap-archive-key-0123456789abcdef')),
    '{"x": 2}'::jsonb, 'a sealed one: opened with the caller''s key'
);

-- the tenant rule: a token of tap_arch_b reads its own files only
create temp table tok as
select jobctl.create_api_token('tap_arch_b', array['jobs:read']) as token;
select jobctl.authenticate(token, 'jobs:read') from tok;
select results_eq(
    $$select url from jobctl.archived_job(900000000007)$$, $$values ('file:///tap/b1')$$,
    'a token of tap_arch_b: its own files only'
);
select is_empty(
    $$select * from jobctl.archived_job(900000000002)$$, 'another tenant''s file is as unknown as a missing one'
);

select throws_ok(
    $$select jobctl.open_archived_payload('tap_arch_a', '{"x": 1}')$$, '42501', null,
    'open_archived_payload for another tenant: 42501'
);

select * from finish();
rollback;
