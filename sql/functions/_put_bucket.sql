-- jobctl._put_bucket: a tenant's rate bucket of one kind (submit or claim): a sequence whose
-- increment is one token's cost in microseconds (see jobctl._bucket_room), created for a rate,
-- given the new cost when the rate changes (the TAT, in microseconds, stays valid, so the bucket
-- keeps its level), dropped when the rate is NULL. ALTER and DROP wait for transactions that
-- took from it, and its takers wait for them: only put_tenant calls this. The name is derived from
-- the tenant id, so put_tenant finds the sequence again.
create or replace function jobctl._put_bucket(p_tenant_id text, p_kind text, p_rate numeric)
returns regclass
language plpgsql
as $$
declare
    v_name text := format('_bucket_%s_%s', p_kind, substr(md5(p_tenant_id), 1, 20));
    v_cost bigint := ceil(1000000 / p_rate);
    v_bucket regclass := to_regclass(format('jobctl.%I', v_name));
begin
    if p_rate is null then
        if v_bucket is not null then
            execute format('drop sequence jobctl.%I', v_name);
        end if;
        return null;
    end if;
    if v_bucket is null then
        execute format('create sequence jobctl.%I as bigint increment by %s minvalue 0 start 0', v_name, v_cost);
        return format('jobctl.%I', v_name)::regclass;
    end if;
    if (select s.seqincrement from pg_catalog.pg_sequence as s where s.seqrelid = v_bucket) <> v_cost then
        execute format('alter sequence jobctl.%I increment by %s', v_name, v_cost);
    end if;
    return v_bucket;
end
$$;
