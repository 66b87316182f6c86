-- jobctl.init_shard: make this database shard number p_shard of a sharded install (docs/operations.md,
-- Sharding): the sequences of the ids that by-id calls are routed on (job_id_seq, batch_id_seq) step
-- by 64 and hand out only ids with id % 64 = p_shard, from past every id already used. The router
-- sends a by-id call to shard id % 64 (or to the shard its job_route row names). Run once by the
-- installer; again with the same number it changes nothing. Refused while jobs or batches of other
-- residues exist (a database that already served unsharded, or another shard's number).
-- Locks: SHARE on job and batch (no insert meanwhile). Writes: the two sequences.
create or replace function jobctl.init_shard(p_shard integer)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_seq regclass;
    v_table text;
    v_column text;
    v_step bigint;
    v_last bigint;  -- the id nextval would give now
    v_used bigint;
    v_other bigint;
    v_next bigint;
    v_changed integer := 0;
begin
    if p_shard is null or p_shard not between 0 and 63 then
        raise exception using errcode = 'JC001',
            message = 'p_shard is out of range',
            detail = 'field: p_shard',
            hint = 'A shard number is 0..63: the residue of its ids modulo 64.';
    end if;
    lock table jobctl.job, jobctl.batch in share mode;
    for v_seq, v_table, v_column in
        select * from (values
            ('jobctl.job_id_seq'::regclass, 'jobctl.job', 'job_id'),
            ('jobctl.batch_id_seq'::regclass, 'jobctl.batch', 'batch_id')
        ) as s (seq, tbl, col)
    loop
        select s.seqincrement into v_step from pg_catalog.pg_sequence as s where s.seqrelid = v_seq;
        execute format('select case when is_called then last_value + $1 else last_value end from %s', v_seq)
        into v_last
        using v_step;
        if v_step = 64 and v_last % 64 = p_shard then
            continue;  -- already this shard's: the same call again changes nothing
        end if;
        execute format('select max(%1$I), max(%1$I) filter (where %1$I %% 64 <> $1) from %2$s', v_column, v_table)
        into v_used, v_other
        using p_shard;
        if v_other is not null then
            raise exception using errcode = 'JC010',
                message = format('%s already holds ids of another shard', v_table),
                detail = format('field: p_shard' || chr(10) || 'id: %s', v_other),
                hint = 'Make a shard of a new database: one whose ids all have this residue modulo 64, or none.';
        end if;
        v_next := greatest(v_last, v_used + 1, 1);
        v_next := v_next + ((p_shard - v_next % 64) + 64) % 64;
        execute format('alter sequence %s increment by 64 minvalue 0 restart with %s', v_seq, v_next);
        v_changed := v_changed + 1;
    end loop;
    return v_changed;
end
$$;

comment on function jobctl.init_shard(integer) is
'Make this database shard p_shard (0..63) of a sharded install: job and batch ids from now on step by 64
and all have id % 64 = p_shard, past every id used so far, so ids stay unique across shards and roughly
ordered by time, and the router finds a job''s shard in its id. Returns how many sequences it changed:
2 the first time, 0 when the database already is that shard. Run by the installer
(`jobctl shards init-shard`), not by services.
Errors: JC001 p_shard is NULL or outside 0..63, JC010 jobs or batches with ids of another residue exist
(the database served unsharded, or is another shard).
Example:
select jobctl.init_shard(2);   -- 2; then job ids are 66, 130, 194, ...';
