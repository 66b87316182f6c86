-- The object archive's erasures and manifest, their database side (jobctl._archive_erasures,
-- _archive_rewritten, _archive_erased, _archive_files; python/jobctl/archive.py rewrites the
-- files): forget_subject's requests per file of the tenant, a rewritten file recorded (or a gone one
-- forgotten) only under the exporter's lease, the requests marked done up to the last one applied.
-- Tenants tap_era_a (three files, two erasures) and tap_era_b (no file, one erasure); rolled back.
-- The files themselves: tests/test_archive.py.
begin;
select plan(14);

insert into jobctl.archive_manifest (tenant_id, job_day, url, job_count, bytes, min_job_id, max_job_id, sha256) values
('tap_era_a', '2001-01-02', 'file:///tap/era/a2', 10, 100, 800000000011, 800000000020, repeat('b', 64)),
('tap_era_a', '2001-01-01', 'file:///tap/era/a1', 10, 100, 800000000001, 800000000010, repeat('a', 64)),
('tap_era_a', '2001-01-03', 'file:///tap/era/a3', 10, 100, 800000000021, 800000000030, repeat('c', 64));
insert into jobctl.archive_erasure (tenant_id, subject_key) values
('tap_era_a', 'user-1'), ('tap_era_b', 'user-9'), ('tap_era_a', 'user-2');

select results_eq(
    $$select tenant_id, subjects, url, sha256 = repeat('a', 64) from jobctl._archive_erasures()
      where tenant_id like 'tap_era_%'$$,
    $$values ('tap_era_a', array['user-1', 'user-2'], 'file:///tap/era/a1', true),
        ('tap_era_a', array['user-1', 'user-2'], 'file:///tap/era/a2', false),
        ('tap_era_a', array['user-1', 'user-2'], 'file:///tap/era/a3', false),
        ('tap_era_b', array['user-9'], null, null)$$,
    '_archive_erasures: a row per file of each tenant with requests, oldest day first; none for a tenant without files'
);
select is(
    (
        select distinct last_id from jobctl._archive_erasures()
        where tenant_id = 'tap_era_a'
    ),
    (
        select max(erasure_id) from jobctl.archive_erasure
        where tenant_id = 'tap_era_a'
    ),
    '_archive_erasures: last_id is the tenant''s last request'
);

select results_eq(
    $$select url, job_count from jobctl._archive_files('tap_era_a')$$,
    $$values ('file:///tap/era/a1', 10::bigint), ('file:///tap/era/a2', 10), ('file:///tap/era/a3', 10)$$,
    '_archive_files: a tenant''s files in day order'
);
select ok(
    (select count(*) from jobctl._archive_files()) >= 3, '_archive_files(NULL): every tenant''s'
);

-- a rewrite, under the lease
select jobctl._archive_record_writing('file:///tap/era/a1.tmp');
select ok(jobctl._archive_lease('00000000-0000-0000-0000-0000000000b1', 60), 'another run holds the lease');
select is(
    jobctl._archive_rewritten(
        '00000000-0000-0000-0000-0000000000a1', 60,
        (
            select file_id from jobctl.archive_manifest
            where url = 'file:///tap/era/a1'
        ),
        (
            '{"rows": 7, "bytes": 70, "min_job_id": 800000000002, "max_job_id": 800000000009, "sha256": "'
            || repeat('d', 64) || '", "tmp_url": "file:///tap/era/a1.tmp"}'
        )::jsonb
    ),
    false, '_archive_rewritten without the lease: false'
);
select results_eq(
    $$select job_count, rewritten_at is null from jobctl.archive_manifest where url = 'file:///tap/era/a1'$$,
    $$values (10::bigint, true)$$, 'and nothing is recorded'
);
select ok(jobctl._archive_release('00000000-0000-0000-0000-0000000000b1'), 'the other run gives it up');
select is(
    jobctl._archive_rewritten(
        '00000000-0000-0000-0000-0000000000a1', 60,
        (
            select file_id from jobctl.archive_manifest
            where url = 'file:///tap/era/a1'
        ),
        (
            '{"rows": 7, "bytes": 70, "min_job_id": 800000000002, "max_job_id": 800000000009, "sha256": "'
            || repeat('d', 64) || '", "tmp_url": "file:///tap/era/a1.tmp"}'
        )::jsonb
    ),
    true, '_archive_rewritten with the lease: true'
);
select results_eq(
    $$select job_count, bytes, min_job_id, max_job_id, sha256 = repeat('d', 64), rewritten_at is not null
      from jobctl.archive_manifest where url = 'file:///tap/era/a1'$$,
    $$values (7::bigint, 70::bigint, 800000000002::bigint, 800000000009::bigint, true, true)$$,
    'the rewritten file is recorded'
);
select is_empty(
    $$select from jobctl.archive_writing where url = 'file:///tap/era/a1.tmp'$$, 'its archive_writing row is gone'
);
select ok(
    jobctl._archive_rewritten(
        '00000000-0000-0000-0000-0000000000a1', 60,
        (
            select file_id from jobctl.archive_manifest
            where url = 'file:///tap/era/a3'
        ), null
    ),
    '_archive_rewritten of a file that is gone'
);
select results_eq(
    $$select url from jobctl._archive_files('tap_era_a')$$,
    $$values ('file:///tap/era/a1'), ('file:///tap/era/a2')$$,
    'its manifest row goes'
);

-- a request that came in after the run read them stays
insert into jobctl.archive_erasure (tenant_id, subject_key) values ('tap_era_a', 'user-3');
select is(
    jobctl._archive_erased(
        'tap_era_a',
        (
            select max(erasure_id) from jobctl.archive_erasure
            where tenant_id = 'tap_era_a' and subject_key <> 'user-3'
        )
    ),
    2, '_archive_erased: the tenant''s requests up to last_id go'
);

select * from finish();
rollback;
