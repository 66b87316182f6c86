-- jobctl.init_shard: the checks that need no empty database (the test database holds other suites'
-- and the neighbours' jobs, of every residue). Making a fresh database a shard, and the ids it then
-- hands out: tests/test_shards.py.
begin;
select plan(7);

select has_function('jobctl', 'init_shard', array['integer'], 'init_shard(p_shard) exists');

select throws_ok($$select jobctl.init_shard(null)$$, 'JC001', 'p_shard is out of range', 'a NULL shard number');
select throws_ok($$select jobctl.init_shard(-1)$$, 'JC001', 'p_shard is out of range', 'a negative shard number');
select throws_ok($$select jobctl.init_shard(64)$$, 'JC001', 'p_shard is out of range', 'shard numbers end at 63');

-- two jobs in a row: ids of two residues modulo 64, so no shard number fits them both
select count(*) from jobctl.submit_jobs('[{"tenant_id": "tap_shard", "queue": "tap_shard_q", "payload": {}},
    {"tenant_id": "tap_shard", "queue": "tap_shard_q", "payload": {}}]');
select throws_ok(
    format(
        'select jobctl.init_shard(%s)',
        (
            select max(j.job_id) % 64 from jobctl.job as j
            where j.tenant_id = 'tap_shard'
        )
    ),
    'JC010', 'jobctl.job already holds ids of another shard',
    'a database whose jobs have other residues is refused'
);
select is(
    (
        select s.seqincrement from pg_catalog.pg_sequence as s
        where s.seqrelid = 'jobctl.job_id_seq'::regclass
    ),
    1::bigint,
    'a refused call leaves the id sequence as it was'
);
select is_empty(
    $$select r.rolname from pg_catalog.pg_roles as r
      where r.rolname like 'jobctl\_%'
        and has_function_privilege(r.oid, 'jobctl.init_shard(integer)'::regprocedure, 'EXECUTE')$$,
    'no jobctl role may run it: the installer does, as the schema owner'
);

select * from finish();
rollback;
