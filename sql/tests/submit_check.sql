-- jobctl._submit_check: the "check" step of jobctl._submit: the first bad spec of a call raises,
-- naming its field (and with p_batch its index); a call for a tenant that is not the caller's
-- raises 42501. Writes nothing. Tenants tap_sc_*.
begin;
select plan(18);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', '_submit_check', array['jobctl._job_spec[]', 'boolean', 'boolean', 'timestamp with time zone'],
    '_submit_check exists'
);

-- the specs by JSON (jobctl._job_specs, which checks the fields' types; the rules are _submit_check's)
create function pg_temp.specs(p_jobs text) returns jobctl._job_spec[]
language sql as $$
    select jobctl._job_specs(p_jobs::jsonb, false)
$$;
create function pg_temp.check_of(p_jobs text, p_batch boolean default true) returns text
language sql as $$
    select pg_temp.error_of(format(
        'select jobctl._submit_check(pg_temp.specs(%L), %L, true, now())', p_jobs, p_batch
    ))
$$;

select is(
    jobctl._submit_check(pg_temp.specs('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}}]'), false, true, now())::text,
    '(f,f)', 'a valid plain spec: no error, neither linked nor keyed'
);
select is(
    jobctl._submit_check(
        pg_temp.specs(
            '[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}},
              {"tenant_id": "tap_sc_a", "queue": "q", "payload": {}, "dedup_key": "k"}]'
        ),
        true, true, now()
    )::text,
    '(f,t)', 'a spec with a dedup key: keyed'
);
select is(
    jobctl._submit_check(
        array_append(
            pg_temp.specs('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}}]'),
            row(
                'tap_sc_a', 'q', '{}', 0, null, null, null, null, null, null, null, null, null, '{1}', true, null, null,
                null, null, null
            )::jobctl._job_spec
        ),
        true, true, now()
    )::text,
    '(t,f)', 'a spec with after (a workflow''s edge to an earlier spec): linked'
);
select is(
    pg_temp.check_of('[
        {"tenant_id": "tap_sc_a", "queue": "q", "payload": {}},
        {"tenant_id": "tap_sc_a", "queue": "q", "payload": {}, "priority": 101},
        {"tenant_id": "", "queue": "q", "payload": {}}
    ]'),
    'JC001: jobs[1].priority must be an integer from -100 to 100, not 101 (field: priority)',
    'the first bad spec of a batch raises, named with its index'
);
select is(
    pg_temp.check_of('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}, "max_attempts": 0}]', false),
    'JC001: max_attempts must be from 1 to 1000, not 0 (field: max_attempts)',
    'a single job: the message without an index'
);
select is(
    pg_temp.check_of(format('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {"x": "%s"}}]', repeat('x', 70000))),
    'JC002: jobs[0].payload is 70009 bytes; the limit is 65536 (field: payload)',
    'a payload over 64 KiB: JC002 with its size'
);
select is(
    pg_temp.check_of('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}, "subject_key": "a\u0007b"}]'),
    'JC001: jobs[0].subject_key must not contain control characters (field: subject_key)',
    'a control character: the field that has it is named'
);
select is(
    pg_temp.check_of('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}, "dedup_mode": "replace"}]'),
    'JC001: jobs[0].dedup_states, dedup_period and dedup_mode need a dedup_key (field: dedup_key)',
    'a scoped key''s option without a key'
);
select is(
    pg_temp.check_of('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}, "dedup_key": "k", "dedup_mode": "sometimes"}]'),
    'JC001: jobs[0].dedup_mode must be keep, replace or preserve_run_at, not sometimes (field: dedup_mode)',
    'a bad dedup_mode, named with its value'
);
select is(
    pg_temp.error_of($$select jobctl._submit_check(array[
        row('tap_sc_a', 'q', '{}', 0, null, null, null, null, null, null, null, null, null, '{1}', true, null, null,
            null, null, null)::jobctl._job_spec
    ], true, true, now())$$),
    'JC001: jobs[0].depends_on must name jobs listed before this one (field: depends_on)',
    'an edge to itself (after, by position) is refused: no cycle can be written'
);
select is(
    pg_temp.error_of($$select jobctl._submit_check(
        array_fill((pg_temp.specs('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}}]'))[1], array[10001]),
        true, true, now()
    )$$),
    'JC001: jobs holds 10001 jobs; at most 10000 may be submitted at once (field: jobs)',
    'over 10,000 jobs'
);
select is(
    jobctl._submit_check(
        array_fill((pg_temp.specs('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}}]'))[1], array[10000]),
        true, true, now()
    )::text,
    '(f,f)', '10,000 jobs are taken'
);

-- access: a role granted tenant a submits for a only; a schedule's run (p_caller false) for any
create role tap_sc_role;
grant jobctl_writer to tap_sc_role;
grant execute on all functions in schema jobctl to tap_sc_role;  -- (undone by the rollback below)
select jobctl.grant_tenant('tap_sc_role', 'tap_sc_a');
create temp table acc (own text, other text, run text);
grant insert on acc to tap_sc_role;
create temp table sp as
select
    pg_temp.specs('[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}}]') as own,
    pg_temp.specs(
        '[{"tenant_id": "tap_sc_a", "queue": "q", "payload": {}}, {"tenant_id": "tap_sc_b", "queue": "q", "payload": {}}]'
    )
        as other;
grant select on sp to tap_sc_role;
set local session authorization tap_sc_role;
insert into acc
select
    pg_temp.error_of('select jobctl._submit_check((select sp.own from sp), true, true, now())') as own,
    pg_temp.error_of('select jobctl._submit_check((select sp.other from sp), true, true, now())') as other,
    pg_temp.error_of('select jobctl._submit_check((select sp.other from sp), true, false, now())') as run;
reset session authorization;
select is((select acc.own from acc), 'no error', 'the caller''s own tenant: no error');
select is(
    (select acc.other from acc), '42501: jobs[1].tenant_id: no jobs:submit access to tenant tap_sc_b (field: tenant_id)',
    'another tenant: 42501 naming the job and the tenant'
);
select is((select acc.run from acc), 'no error', 'p_caller false (a schedule''s run): any tenant');

select is(
    (
        select count(*) from jobctl.tenant
        where tenant_id like 'tap\_sc\_%'
    ), 0::bigint,
    'the check registers no tenant and writes nothing'
);
select is(
    pg_temp.check_of('[{"tenant_id": "tap_sc_a", "queue": "", "payload": {}}]'),
    'JC001: jobs[0].queue must be a non-empty string (field: queue)',
    'an empty queue'
);

select * from finish();
rollback;
