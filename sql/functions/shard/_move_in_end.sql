-- jobctl._move_in_end: the target shard's last step of a tenant's move in, after the source has
-- finished it (jobctl._move_out_finish): nothing of the tenant is left unfinished there, so the keys
-- its jobs held there (jobctl._move_in_keys) are forgotten here. Leaves the rows of a move off this
-- shard alone. Again it deletes nothing. Returns how many keys it forgot. Writes: _move_key (delete).
create or replace function jobctl._move_in_end(p_tenant_id text)
returns integer
language plpgsql
as $$
declare
    v_n integer;
begin
    delete from jobctl._move_key as k
    where k.tenant_id = p_tenant_id
        and not exists (
            select from jobctl._tenant_move as m where m.tenant_id = p_tenant_id and m.finished_at is null
        );
    get diagnostics v_n = row_count;
    return v_n;
end
$$;
