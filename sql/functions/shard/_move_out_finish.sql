-- jobctl._move_out_finish: whether a tenant's move off this (source) shard is over, and if so marks
-- it finished: the submits are fenced (jobctl._move_out_fence) and every transaction that began
-- before the fence has ended (one of them could still add a job), no job of the tenant runs here (a
-- running job finishes here: its by-id calls route here by its id; a retry it leaves is moved by the
-- next page), and none is pending or failed. Returns {"running", "unfinished", "settled",
-- "finished"}. The tenant's finished history stays here (by-id lookups route here by id % 64); the
-- keys of the jobs the move took away (jobctl._move_key) go: the fence refuses every submit here.
-- Reads pg_stat_activity (the mover runs as a superuser or the schema owner with pg_read_all_stats).
-- Writes: _tenant_move (finished_at), _move_key (delete).
create or replace function jobctl._move_out_finish(p_tenant_id text)
returns jsonb
language plpgsql
as $$
declare
    v_move jobctl._tenant_move;
    v_running integer;
    v_unfinished boolean;
    v_settled boolean;
begin
    select * into v_move from jobctl._tenant_move as m where m.tenant_id = p_tenant_id for update;
    if not found then
        raise exception using errcode = 'JC010', message = format('tenant %s is not moving off this shard', p_tenant_id),
            detail = 'field: tenant_id', hint = 'Start the move with jobctl shards move.';
    end if;
    select count(*) into v_running from jobctl._running as r where r.tenant_id = p_tenant_id;
    v_unfinished := exists (
        select from jobctl.job as j where j.tenant_id = p_tenant_id and j.state in ('pending', 'failed', 'waiting')
    );
    v_settled := v_move.fenced_at is not null and not exists (
        select from pg_catalog.pg_stat_activity as a
        where a.datname = current_database() and a.pid <> pg_backend_pid() and a.xact_start < v_move.fenced_at
    );
    if v_move.finished_at is null and v_running = 0 and not v_unfinished and v_settled then
        update jobctl._tenant_move as m set finished_at = clock_timestamp() where m.tenant_id = p_tenant_id
        returning * into v_move;
        delete from jobctl._move_key as k where k.tenant_id = p_tenant_id;
        perform jobctl._audit('move_tenant_out_finished', p_tenant_id, jsonb_build_object('to_shard', v_move.to_shard));
    end if;
    return jsonb_build_object(
        'running', v_running, 'unfinished', v_unfinished, 'settled', v_settled,
        'finished', v_move.finished_at is not null
    );
end
$$;
