-- jobctl._dedup_holders: the "dedup" step of jobctl._submit: which specs of a keyed call become
-- jobs, and what each spec answers (answer -k: the k-th new job; > 0: the holder's id). Under
-- REPEATABLE READ: submit_job_repeatable_read.sql; racing submitters: tests/test_workflows.py and
-- tests/test_locks.py. Tenants tap_dh_*.
begin;
select plan(11);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', '_dedup_holders', array['jobctl._job_spec[]', 'text[]', 'timestamp with time zone'], '_dedup_holders exists'
);

create function pg_temp.specs(p_jobs text) returns jobctl._job_spec[]
language sql as $$
    select jobctl._job_specs(p_jobs::jsonb, false)
$$;
create function pg_temp.answers(p_jobs text, p_names text[] default null) returns text
language sql as $$
    select row(
        (select array_agg(row(s.tenant_id, s.dedup_key, s.payload)::text) from unnest(d.specs) as s), d.answers, d.dups, d.names
    )::text
    from jobctl._dedup_holders(pg_temp.specs(p_jobs), p_names, now()) as d
$$;

-- within the call: a key's first spec becomes a job, its repeats answer it; unkeyed specs are new
select is(
    pg_temp.answers('[
        {"tenant_id": "tap_dh_a", "queue": "q", "payload": {"i": 1}, "dedup_key": "k1"},
        {"tenant_id": "tap_dh_a", "queue": "q", "payload": {"i": 2}},
        {"tenant_id": "tap_dh_a", "queue": "q", "payload": {"i": 3}, "dedup_key": "k1"},
        {"tenant_id": "tap_dh_b", "queue": "q", "payload": {"i": 4}, "dedup_key": "k1"},
        {"tenant_id": "tap_dh_a", "queue": "q", "payload": {"i": 5}, "dedup_key": "k2"}
    ]', array['n1', 'n2', 'n3', 'n4', 'n5']),
    row(
        array[
            '(tap_dh_a,k1,"{""i"": 1}")', '(tap_dh_a,,"{""i"": 2}")', '(tap_dh_b,k1,"{""i"": 4}")', '(tap_dh_a,k2,"{""i"": 5}")'
        ],
        '{-1,-2,-1,-3,-4}'::bigint[], '{f,f,t,f,f}'::boolean[], '{n1,n2,n4,n5}'::text[]
    )::text,
    'the first spec of each (tenant, key) becomes a job, a repeat answers it; keys are per tenant; names follow the new jobs'
);

-- a committed job holds its key: the spec answers it and makes no job
create temp table h as
select (select s.job_id from jobctl.submit_job('tap_dh_a', 'q', '{"old": true}', dedup_key => 'held') as s) as id;
select is(
    (
        select row(d.specs, d.answers, d.dups)::text
        from jobctl._dedup_holders(pg_temp.specs('[
        {"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "held"},
        {"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "held"}
     ]'), null, now()) as d
    ),
    row(null::jobctl._job_spec[], array[(select h.id from h), (select h.id from h)], '{t,t}'::boolean[])::text,
    'a key a job holds: every spec of it answers the holder, and none becomes a job'
);
select is(
    (select d.answers from jobctl._dedup_holders(
        pg_temp.specs(
            '[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "held", "dedup_states": ["running"]}]'
        ),
        null, now()
    ) as d),
    '{-1}'::bigint[], 'dedup_states that the holder is not in: a new job'
);
select is(
    (select d.answers from jobctl._dedup_holders(
        pg_temp.specs(
            '[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "held", "dedup_states": ["pending"]}]'
        ),
        null, now()
    ) as d),
    array[(select h.id from h)], 'dedup_states that it is in: the holder'
);
select is(
    (select d.answers from jobctl._dedup_holders(
        pg_temp.specs('[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "held", "dedup_period": "1 hour"}]'),
        null, now() + interval '2 hours'
    ) as d),
    '{-1}'::bigint[], 'a holder made before the current dedup_period: a new job'
);

-- during a move, a job on the other shard holds its key (jobctl._move_key), the newest holder wins
insert into jobctl._move_key (job_id, tenant_id, dedup_key, state, created_at)
values (-7, 'tap_dh_a', 'moved', 'pending', now() - interval '1 minute');
select is(
    (select d.answers from jobctl._dedup_holders(
        pg_temp.specs('[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "moved"}]'), null, now()
    ) as d),
    '{-7}'::bigint[], 'a key held on the move''s other shard: that job'
);
select is(
    (select d.dups from jobctl._dedup_holders(
        pg_temp.specs('[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "moved"}]'), null, now()
    ) as d),
    '{t}'::boolean[], 'a key held on the move''s other shard: a duplicate'
);
select is(
    (select d.answers from jobctl._dedup_holders(
        pg_temp.specs(
            '[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "moved", "dedup_states": ["completed"]}]'
        ),
        null, now()
    ) as d),
    '{-1}'::bigint[], 'its recorded state counts for dedup_states'
);
select is(
    (select d.names from jobctl._dedup_holders(
        pg_temp.specs('[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "x"}]'), null, now()
    ) as d),
    null, 'no names given: none'
);

-- a tenant that moved while the call waited for the lock is refused after it
update jobctl.tenant set moved_to = 3
where tenant_id = 'tap_dh_a';
select is(
    pg_temp.error_of($$select jobctl._dedup_holders(
        pg_temp.specs('[{"tenant_id": "tap_dh_a", "queue": "q", "payload": {}, "dedup_key": "k"}]'), null, now()
    )$$),
    E'JC011: tenant tap_dh_a has moved to shard 3 (field: tenant_id\nretry_after: 1)',
    'a tenant that moved off this shard: JC011'
);

select * from finish();
rollback;
