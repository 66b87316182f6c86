-- jobctl._move_out_begin: the first step of moving a tenant off this shard (the source), run by the
-- mover (python/jobctl/shard_move.py; docs/operations.md, Moving a tenant between shards). Records
-- the move (_tenant_move: the target shard and whether the tenant was paused), pauses the tenant's
-- claims here and empties the shared lane lists, so that its running jobs drain and nothing new of
-- it starts here; submits still land here until the router flips (they move with the rest). Refuses
-- what a move does not carry: waiting jobs (dependencies, batch callbacks, parents parked on a child:
-- jobctl.await_job spawns none once the move has begun, and the tenant row's lock orders a spawn and
-- this step), open batches and schedules. Again for the same move it changes nothing. Returns the tenant's settings, key limits,
-- role grants (by role name: the target may be another cluster) and API tokens (their hashes) for
-- jobctl._move_in_begin on the target, with was_paused and started_at; the grants and tokens stay
-- here too, for the finished history that stays. A new move forgets the keys an earlier move left
-- here (jobctl._move_key: one whose last step, jobctl._move_in_end, did not run).
-- Locks: the tenant row. Writes: _tenant_move, tenant (paused), _lane_generation and _lane_cache
-- (_relist_lanes), _move_key (delete), audit_log.
create or replace function jobctl._move_out_begin(p_tenant_id text, p_to_shard integer)
returns jsonb
language plpgsql
as $$
declare
    v_tenant jobctl.tenant;
    v_move jobctl._tenant_move;
    v_what text;
begin
    if p_to_shard is null or p_to_shard not between 0 and 63 then
        raise exception using errcode = 'JC001', message = 'to_shard must be a shard number from 0 to 63',
            detail = 'field: to_shard';
    end if;
    select * into v_tenant from jobctl.tenant as t where t.tenant_id = p_tenant_id for update;
    if not found then
        raise exception using errcode = 'P0002', message = format('no tenant %s on this shard', p_tenant_id),
            detail = 'field: tenant_id';
    end if;
    select * into v_move from jobctl._tenant_move as m where m.tenant_id = p_tenant_id;
    if v_move.finished_at is null and v_move.to_shard <> p_to_shard then
        raise exception using errcode = 'JC010',
            message = format('tenant %s is already moving to shard %s', p_tenant_id, v_move.to_shard),
            detail = 'field: to_shard',
            hint = 'Finish that move first: run it again with the same target.';
    end if;
    if v_tenant.moved_to is not null and v_move.finished_at is not null then
        raise exception using errcode = 'JC010',
            message = format('tenant %s has moved to shard %s', p_tenant_id, v_tenant.moved_to),
            detail = 'field: tenant_id',
            hint = 'Move it from the shard it lives on.';
    end if;
    v_what := case
        when exists (select from jobctl._waiting as w where w.tenant_id = p_tenant_id)
            then 'waiting jobs (dependencies or batch callbacks)'
        when exists (select from jobctl.batch as b where b.tenant_id = p_tenant_id and b.finished_at is null)
            then 'open batches'
        when exists (select from jobctl.schedule as s where s.tenant_id = p_tenant_id)
            then 'schedules'
    end;
    if v_what is not null then
        raise exception using errcode = 'JC010',
            message = format('tenant %s has %s, which a move does not carry', p_tenant_id, v_what),
            detail = 'field: tenant_id',
            hint = 'Let its workflows and batches end and drop its schedules (put them again on the target after the move).';
    end if;
    if v_move.tenant_id is null or v_move.finished_at is not null then
        insert into jobctl._tenant_move as m (tenant_id, to_shard, was_paused)
        values (p_tenant_id, p_to_shard, v_tenant.paused)
        on conflict (tenant_id) do update
        set to_shard = excluded.to_shard, was_paused = excluded.was_paused, started_at = clock_timestamp(),
            fenced_at = null, finished_at = null
        returning * into v_move;
        update jobctl.tenant as t set paused = true, updated_at = now()
        where t.tenant_id = p_tenant_id and not t.paused;
        perform jobctl._relist_lanes();
        delete from jobctl._move_key as k where k.tenant_id = p_tenant_id;
        perform jobctl._audit('move_tenant_out', p_tenant_id, jsonb_build_object('to_shard', p_to_shard));
    end if;
    return jsonb_build_object(
        'tenant', to_jsonb(v_tenant) - array['submit_bucket', 'claim_bucket', 'admitted', 'finished', 'pending_offset'],
        'limits', coalesce((
            select jsonb_agg(to_jsonb(c)) from jobctl.concurrency_limit as c where c.tenant_id = p_tenant_id
        ), '[]'),
        'grants', coalesce((
            select jsonb_agg(jsonb_build_object('role', r.rolname, 'granted_at', g.granted_at, 'granted_by', g.granted_by))
            from jobctl._role_tenant as g
            inner join pg_catalog.pg_roles as r on r.oid = g.role_oid
            where g.tenant_id = p_tenant_id
        ), '[]'),
        'tokens', coalesce((
            select jsonb_agg(to_jsonb(a) - 'token_id') from jobctl._api_token as a where a.tenant_id = p_tenant_id
        ), '[]'),
        'was_paused', v_move.was_paused,
        'started_at', v_move.started_at
    );
end
$$;
