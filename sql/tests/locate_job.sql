-- jobctl.locate_job: where a job is, in one call: its row in the database (as get_job), or the
-- object-archive files that may hold it (as archived_job), or nothing; of the caller's tenants only.
-- Tenants tap_loc_a and tap_loc_b; one hot job, manifest rows only (no files).
begin;
select plan(8);

select has_function('jobctl', 'locate_job', array['bigint'], 'locate_job(job_id) exists');
select isnt(obj_description('jobctl.locate_job(bigint)'::regprocedure), null, 'locate_job has a comment');

create temp table hot as
select job_id from jobctl.submit_job('tap_loc_a', 'tap_loc_q', '{"x": 1}');
insert into jobctl.archive_manifest (tenant_id, job_day, url, job_count, bytes, min_job_id, max_job_id, sha256) values
('tap_loc_a', '2001-01-01', 'file:///tap/loc/a1', 10, 123, 700000000001, 700000000010, repeat('a', 64)),
('tap_loc_b', '2001-01-02', 'file:///tap/loc/b1', 10, 456, 700000000005, 700000000015, repeat('b', 64));
insert into jobctl.archive_erasure (tenant_id, subject_key) values ('tap_loc_b', 'user-1');

select results_eq(
    $$select (l.job).job_id, (l.job).tenant_id, (l.job).payload, l.files from jobctl.locate_job((select job_id from hot)) as l$$,
    $$select job_id, 'tap_loc_a'::text, '{"x": 1}'::jsonb, null::jsonb from hot$$,
    'a job in the database: its row as get_job returns it, no files'
);
select results_eq(
    $$select (l.job).job_id, l.files from jobctl.locate_job(700000000007) as l$$,
    $$values (null::bigint, '[{"url": "file:///tap/loc/a1", "day": "2001-01-01", "bytes": 123, "tenant_id": "tap_loc_a",
        "forgotten": []}, {"url": "file:///tap/loc/b1", "day": "2001-01-02", "bytes": 456, "tenant_id": "tap_loc_b",
        "forgotten": ["user-1"]}]'::jsonb)$$,
    'an archived job: no row, the files that may hold it, oldest day first, with their sizes and pending erasures'
);
select is_empty($$select * from jobctl.locate_job(700000000099)$$, 'an id nothing holds: zero rows');
select is_empty($$select * from jobctl.locate_job(null)$$, 'a NULL id: zero rows');

-- the tenant rule: a token of tap_loc_b sees its own file only, and not tap_loc_a's hot job
create temp table tok as
select jobctl.create_api_token('tap_loc_b', array['jobs:read']) as token;
select jobctl.authenticate(token, 'jobs:read') from tok;
select results_eq(
    $$select l.files -> 0 ->> 'url', jsonb_array_length(l.files) from jobctl.locate_job(700000000007) as l$$,
    $$values ('file:///tap/loc/b1', 1)$$,
    'a token of tap_loc_b: its own file only'
);
select is_empty(
    $$select * from jobctl.locate_job((select job_id from hot))$$, 'another tenant''s job is as unknown as a missing one'
);

select * from finish();
rollback;
