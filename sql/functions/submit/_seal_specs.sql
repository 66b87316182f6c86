-- jobctl._seal_specs: the "seal" step of jobctl._submit: the specs with the payloads of tenants that
-- encrypt theirs sealed with the session's key (jobctl._seal); every step after works on them as
-- given. A tenant whose key jobctl.payload_keys lacks, or holds another key than the one
-- put_tenant recorded (it would seal jobs its workers cannot open), raises JC008 naming the first
-- such job (jobs[i]. with p_batch).
-- Calls: _key_check, _payload_key, _seal. Locks: nothing. Writes: nothing.
create or replace function jobctl._seal_specs(p_specs jobctl._job_spec[], p_batch boolean)
returns jobctl._job_spec[]
language plpgsql
as $$
#variable_conflict use_column
declare
    v_bad record;
    v_sealed text[];  -- the tenants of the call that encrypt their payloads
    v_i integer;
begin
    select o.ordinality as ord, o.tenant_id into v_bad
    from unnest(p_specs) with ordinality as o
    inner join jobctl.tenant as t on t.tenant_id = o.tenant_id and t.encrypt_payloads
    where jobctl._key_check(jobctl._payload_key(o.tenant_id)) is distinct from t.payload_key_check
    order by o.ordinality
    limit 1;
    if found then
        raise exception using errcode = 'JC008',
            message = format('%stenant %s encrypts its payloads: jobctl.payload_keys has no key for it, or not its key',
                case when p_batch then format('jobs[%s].', v_bad.ord - 1) end, v_bad.tenant_id),
            detail = 'field: jobctl.payload_keys',
            hint = 'Nothing was submitted. Set jobctl.payload_keys to {"<tenant>": "<key>"} for the session (docs/security.md).';
    end if;
    v_sealed := array(
        select t.tenant_id from jobctl.tenant as t
        where t.tenant_id in (select s.tenant_id from unnest(p_specs) as s) and t.encrypt_payloads
    );
    for v_i in 1..cardinality(p_specs) loop
        if p_specs[v_i].tenant_id = any(v_sealed) then
            p_specs[v_i].payload := jobctl._seal(p_specs[v_i].payload, jobctl._payload_key(p_specs[v_i].tenant_id));
        end if;
    end loop;
    return p_specs;
end
$$;
