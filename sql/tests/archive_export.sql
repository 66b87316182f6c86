-- The object archive's export, its database side (jobctl._archive_*, python/jobctl/archive.py
-- writes the files): the units due, a unit's files and their rows a chunk at a time with their
-- events, the URLs recorded before a file is written, and the commit that renews the lease, locks,
-- checks, records and drops a day (or deletes late jobs), changing nothing when the unit changed.
-- A day of 2001 made here (two tenants, four jobs, events of a job carried over), rolled back.
-- The files themselves, a crash mid-run and two runs at once: tests/test_archive.py.
begin;
select plan(36);

create table jobctl_archive.tap_job_day partition of jobctl.job_archive
for values from ('2001-01-01 00:00+00') to ('2001-01-02 00:00+00');
create table jobctl_archive.tap_event_day partition of jobctl._event_archive
for values from ('2001-01-01 00:00+00') to ('2001-01-02 00:00+00');
insert into jobctl.job_archive (
    job_id, created_at, tenant_id, queue, state, priority, run_at, attempt, max_attempts,
    payload, started_at, finished_at
)
select
    v.i as job_id,
    '2001-01-01 10:00+00'::timestamptz + make_interval(mins => -9000 - v.i) as created_at,
    v.t as tenant_id,
    'q' as queue,
    'completed' as state,
    0 as priority,
    '2001-01-01 10:00+00' as run_at,
    1 as attempt,
    3 as max_attempts,
    jsonb_build_object('i', v.i) as payload,
    '2001-01-01 11:00+00' as started_at,
    '2001-01-01 12:00+00' as finished_at
from (values (-9001, 'tap_exp_a'), (-9002, 'tap_exp_a'), (-9003, 'tap_exp_a'), (-9004, 'tap_exp_b')) as v (i, t);
-- events of -9001, and of -9099: a job of that day carried over past it (archived later, elsewhere)
insert into jobctl._event_archive (job_id, job_created_at, at, event, attempt, detail) values
(-9001, '2001-01-01 10:00+00', '2001-01-01 10:30+00', 'failed', 1, 'once'),
(-9001, '2001-01-01 10:00+00', '2001-01-01 10:10+00', 'retried', 1, null),
(-9099, '2001-01-01 10:00+00', '2001-01-01 10:20+00', 'failed', 1, 'carried');

update jobctl.retention set archive_url = null;
select is_empty($$select * from jobctl._archive_units()$$, '_archive_units: nothing without an archive_url');
update jobctl.retention set archive_url = '/tmp/tap-archive';
select results_eq(
    $$select archive_url, part::text, events::text, before, late from jobctl._archive_units()
      where part = 'jobctl_archive.tap_job_day'::regclass or late$$,
    $$values ('/tmp/tap-archive', 'jobctl_archive.tap_job_day', 'jobctl_archive.tap_event_day',
        '2001-01-02 00:00+00'::timestamptz, false),
        ('/tmp/tap-archive', 'jobctl.job_archive_default', null, now() - interval '90 days', true)$$,
    '_archive_units: a day past retention.archive with its events'' partition, then the late jobs'
);
select is(
    (select array_agg(u.late) from jobctl._archive_units() as u)[(select count(*)::integer from jobctl._archive_units())],
    true, '_archive_units: the late unit comes last'
);

select throws_ok(
    $$select * from jobctl._archive_tenants('jobctl.job', now())$$, 'JC001', null,
    '_archive_tenants of a table that is not the archive''s: JC001'
);
select throws_ok(
    $$select jobctl._archive_part(null)$$, 'JC001', null, '_archive_part(NULL): JC001'
);
select is(
    jobctl._archive_part('jobctl.job_archive_default'), 'jobctl.job_archive_default'::regclass,
    '_archive_part: the default partition is a unit'
);
select results_eq(
    $$select tenant_id, day, job_count from jobctl._archive_tenants('jobctl_archive.tap_job_day', '2001-01-02')$$,
    $$values ('tap_exp_a', '2001-01-01'::date, 3::bigint), ('tap_exp_b', '2001-01-01'::date, 1::bigint)$$,
    '_archive_tenants: a file per tenant and day, with its rows'
);
select results_eq(
    $$select tenant_id, job_count from jobctl._archive_tenants('jobctl_archive.tap_job_day', '2001-01-01 10:00:01+00')$$,
    $$select 'x'::text, 0::bigint where false$$,
    '_archive_tenants: only jobs created before the cutoff'
);

select results_eq(
    $$select name, type from jobctl._archive_columns() limit 2$$,
    $$values ('job_id', 'bigint'), ('created_at', 'timestamp with time zone')$$,
    '_archive_columns: jobctl.job''s columns in table order, with their types'
);
select is(
    (select count(*)::integer from jobctl._archive_columns()),
    (
        select count(*)::integer from pg_catalog.pg_attribute
        where attrelid = 'jobctl.job'::regclass and attnum > 0 and not attisdropped
    ),
    '_archive_columns: every column of jobctl.job'
);

select results_eq(
    $$select job_id, payload from jobctl._archive_chunk('jobctl_archive.tap_job_day', 'tap_exp_a', '2001-01-01',
        '2001-01-02', -10000, 2)$$,
    $$values (-9003::bigint, '{"i": -9003}'::jsonb), (-9002, '{"i": -9002}')$$,
    '_archive_chunk: a tenant''s jobs of the day in id order, max_rows of them'
);
select results_eq(
    $$select job_id from jobctl._archive_chunk('jobctl_archive.tap_job_day', 'tap_exp_a', '2001-01-01',
        '2001-01-02', -9002, 2)$$,
    $$values (-9001::bigint)$$,
    '_archive_chunk: the next chunk after the last id'
);
select is_empty(
    $$select * from jobctl._archive_chunk('jobctl_archive.tap_job_day', 'tap_exp_a', '2001-01-02',
        '2001-01-03', -10000, 10)$$,
    '_archive_chunk: another day: none'
);
select throws_ok(
    $$select * from jobctl._archive_chunk('jobctl_archive.tap_job_day', 'tap_exp_a', '2001-01-01', now(), 0, 0)$$,
    'JC001', 'max_rows must be from 1 to 100000', '_archive_chunk: max_rows 0 is refused'
);
select throws_ok(
    $$select * from jobctl._archive_chunk('jobctl._event_archive_default', 'tap_exp_a', '2001-01-01', now(), 0, 10)$$,
    'JC001', null, '_archive_chunk of a table that is not the archive''s: JC001'
);
select results_eq(
    $$select job_id, event, detail from jobctl._archive_events(array[-9001, -9004]::bigint[])$$,
    $$values (-9001::bigint, 'retried', null::text), (-9001, 'failed', 'once')$$,
    '_archive_events: the jobs'' events in time order'
);

-- the URLs of files being written, and those a crash left
select lives_ok($$select jobctl._archive_record_writing('/tmp/tap-archive/a.parquet')$$, '_archive_record_writing records a URL');
select lives_ok($$select jobctl._archive_record_writing('/tmp/tap-archive/a.parquet')$$, 'again: nothing changes');
select jobctl._archive_record_writing('/tmp/tap-archive/b.parquet');
select jobctl._archive_record_writing('/tmp/tap-archive/left.parquet');
select results_eq(
    $$select * from jobctl._archive_crashed()$$,
    $$values ('/tmp/tap-archive/a.parquet'), ('/tmp/tap-archive/b.parquet'), ('/tmp/tap-archive/left.parquet')$$,
    '_archive_crashed: every URL no commit deleted'
);
select is(jobctl._archive_written(array['/tmp/tap-archive/left.parquet']), 1, '_archive_written forgets one');

-- the commit of the day: two files as the exporter wrote them
create temp table tap_files as
select jsonb_build_array(
    jsonb_build_object(
        'tenant_id', 'tap_exp_a', 'day', '2001-01-01', 'url', '/tmp/tap-archive/a.parquet', 'rows', 3,
        'bytes', 300, 'min_job_id', -9003, 'max_job_id', -9001, 'sha256', repeat('a', 64)
    ),
    jsonb_build_object(
        'tenant_id', 'tap_exp_b', 'day', '2001-01-01', 'url', '/tmp/tap-archive/b.parquet', 'rows', 1,
        'bytes', 100, 'min_job_id', -9004, 'max_job_id', -9004, 'sha256', repeat('b', 64)
    )
) as files;

-- another run holds the lease: nothing happens
select ok(jobctl._archive_lease('00000000-0000-0000-0000-0000000000b0', 60), 'another run holds the lease');
select results_eq(
    $$select held, changed is not null from jobctl._archive_commit('00000000-0000-0000-0000-0000000000a0', 60,
        'jobctl_archive.tap_job_day', '2001-01-02', (select files from tap_files), -36010, null)$$,
    $$values (false, true)$$,
    '_archive_commit without the lease: held false'
);
select ok(jobctl._archive_release('00000000-0000-0000-0000-0000000000b0'), 'the other run gives it up');

-- the day changed since its files were written (an id sum that differs): left for the next run
select results_eq(
    $$select held, changed from jobctl._archive_commit('00000000-0000-0000-0000-0000000000a0', 60,
        'jobctl_archive.tap_job_day', '2001-01-02', (select files from tap_files), -36000, null)$$,
    $$values (true, 'jobctl_archive.tap_job_day: 4 jobs written, 4 there now')$$,
    '_archive_commit of a day that changed: left, with the reason'
);
select is(to_regclass('jobctl_archive.tap_job_day')::text, 'jobctl_archive.tap_job_day', 'and the day is still there');
select is_empty($$select from jobctl.archive_manifest where url like '/tmp/tap-archive/%'$$, 'nothing recorded');

select results_eq(
    $$select held, changed from jobctl._archive_commit('00000000-0000-0000-0000-0000000000a0', 60,
        'jobctl_archive.tap_job_day', '2001-01-02', (select files from tap_files), -36010, null)$$,
    $$values (true, null::text)$$,
    '_archive_commit of the day as written: done'
);
select results_eq(
    $$select tenant_id, job_day, job_count, min_job_id, max_job_id from jobctl.archive_manifest
      where url like '/tmp/tap-archive/%' order by url$$,
    $$values ('tap_exp_a', '2001-01-01'::date, 3::bigint, -9003::bigint, -9001::bigint),
        ('tap_exp_b', '2001-01-01', 1, -9004, -9004)$$,
    'the files are recorded in the manifest'
);
select is_empty($$select * from jobctl._archive_crashed()$$, 'their archive_writing rows are gone');
select is(current_setting('lock_timeout'), '0', 'the lock''s 50 ms lock_timeout ends with the lock');
select ok(
    to_regclass('jobctl_archive.tap_job_day') is null and to_regclass('jobctl_archive.tap_event_day') is null,
    'the day''s partitions are dropped'
);
select results_eq(
    $$select job_id, tableoid::regclass::text, detail from jobctl._event_archive where job_id in (-9001, -9099)$$,
    $$values (-9099::bigint, 'jobctl._event_archive_default', 'carried')$$,
    'the events of a job carried over are put back; the day''s jobs'' go'
);

-- late jobs: in the default partition, deleted by id with their events
insert into jobctl.job_archive (job_id, created_at, tenant_id, queue, state, priority, run_at, attempt, max_attempts, payload)
values (-9101, '2001-01-05 10:00+00', 'tap_exp_a', 'q', 'completed', 0, '2001-01-05 10:00+00', 1, 3, '{}'),
(-9102, '2001-01-05 11:00+00', 'tap_exp_a', 'q', 'completed', 0, '2001-01-05 11:00+00', 1, 3, '{}');
create temp table tap_late as
select jsonb_build_array(jsonb_build_object(
    'tenant_id', 'tap_exp_a', 'day', '2001-01-05',
    'url', '/tmp/tap-archive/late.parquet', 'rows', 2, 'bytes', 100, 'min_job_id', -9102, 'max_job_id', -9101,
    'sha256', repeat('c', 64)
)) as files;
select results_eq(
    $$select held, changed from jobctl._archive_commit('00000000-0000-0000-0000-0000000000a0', 60,
        'jobctl.job_archive_default', '2001-01-06', (select files from tap_late), -18203, array[-9101, -9102, -9103])$$,
    $$values (true, 'jobctl.job_archive_default: 2 jobs written, 2 deleted')$$,
    '_archive_commit of late jobs one of which is gone: left'
);
select is(
    (
        select count(*)::integer from jobctl.job_archive
        where job_id in (-9101, -9102)
    ), 2, 'and nothing deleted'
);
select results_eq(
    $$select held, changed from jobctl._archive_commit('00000000-0000-0000-0000-0000000000a0', 60,
        'jobctl.job_archive_default', '2001-01-06', (select files from tap_late), -18203, array[-9101, -9102])$$,
    $$values (true, null::text)$$,
    '_archive_commit of the late jobs as written: done'
);
select ok(
    not exists (
        select from jobctl.job_archive
        where job_id in (-9101, -9102)
    )
    and exists (
        select from jobctl.archive_manifest
        where url = '/tmp/tap-archive/late.parquet'
    ),
    'the late jobs are deleted and their file recorded'
);

select * from finish();
rollback;
