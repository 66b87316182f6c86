-- jobctl._seal_specs: the "seal" step of jobctl._submit: the payloads of tenants that encrypt theirs
-- sealed with the session's key, the other specs as given; a missing or other key raises JC008.
-- Tenants tap_seal_*.
begin;
select plan(7);
set local jit = off;
\ir helpers.psql

select has_function('jobctl', '_seal_specs', array['jobctl._job_spec[]', 'boolean'], '_seal_specs exists');

select set_config('jobctl.payload_keys', '{"tap_seal_a": "tap-seal-key-0123456789abcdef"}', true);
select jobctl.put_tenant('tap_seal_a', encrypt_payloads => true);
select jobctl.put_tenant('tap_seal_plain');
create temp table s as
select jobctl._job_specs($$[
    {"tenant_id": "tap_seal_plain", "queue": "q", "payload": {"i": 1}},
    {"tenant_id": "tap_seal_a", "queue": "q", "payload": {"i": 2}, "priority": 3, "dedup_key": "k"}
]$$, false) as specs;
create temp table sealed as select jobctl._seal_specs((select s.specs from s), true) as specs;

select is((select sealed.specs[1] from sealed), (select s.specs[1] from s), 'a plain tenant''s spec: as given');
select ok((select sealed.specs[2] from sealed).payload ? '$jobctl_sealed', 'an encrypting tenant''s payload: sealed');
select is(
    jobctl._unseal('tap_seal_a', (select sealed.specs[2] from sealed).payload), '{"i": 2}'::jsonb,
    'and it opens with the tenant''s key (the session''s)'
);
select is(
    row(
        (select sealed.specs[2] from sealed).tenant_id,
        (select sealed.specs[2] from sealed).priority,
        (select sealed.specs[2] from sealed).dedup_key
    )::text,
    '(tap_seal_a,3,k)', 'the spec''s other fields as given'
);

select set_config('jobctl.payload_keys', '{"tap_seal_a": "another-key-0123456789abcdef"}', true);
select is(
    pg_temp.error_of($$select jobctl._seal_specs((select s.specs from s), true)$$),
    'JC008: jobs[1].tenant tap_seal_a encrypts its payloads: jobctl.payload_keys has no key for it, or not its key'
    || ' (field: jobctl.payload_keys)',
    'a key other than the one put_tenant recorded: JC008 naming the job'
);
select set_config('jobctl.payload_keys', '{}', true);
select is(
    pg_temp.error_of($$select jobctl._seal_specs((select s.specs[2:2] from s), false)$$),
    'JC008: tenant tap_seal_a encrypts its payloads: jobctl.payload_keys has no key for it, or not its key'
    || ' (field: jobctl.payload_keys)',
    'no key: JC008 (a single job: without an index)'
);

select * from finish();
rollback;
