-- jobctl._refuse_moved: raise JC011 for a tenant that moved off this shard (tenant.moved_to, set by
-- jobctl._move_out_fence): the router sent the call by a placement that has just flipped, or the
-- caller came straight here, and nothing of the tenant may land here now. Called by jobctl._submit's
-- steps before its dedup lock (_submit_tenants) and again after it (_dedup_holders:
-- jobctl._move_out_keys), and by jobctl.emit_event after its event lock (jobctl._move_out_events).
-- Reads: tenant.
create or replace function jobctl._refuse_moved(p_tenant_id text)
returns void
language plpgsql
as $$
begin
    raise exception using errcode = 'JC011',
        message = format('tenant %s has moved to shard %s', p_tenant_id,
            (select t.moved_to from jobctl.tenant as t where t.tenant_id = p_tenant_id)),
        detail = E'field: tenant_id\nretry_after: 1',
        hint = 'Nothing was written; send the call again through the router, which sends it to the tenant''s shard.';
end
$$;
