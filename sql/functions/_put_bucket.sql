-- jobctl._put_bucket: the rate bucket of a tenant for one kind (submit or claim): a sequence
-- created for a rate, refilled (reset) on every call, dropped when the rate is NULL. Its name is
-- derived from the tenant id (md5), so put_tenant finds it again without storing anything else.
create or replace function jobctl._put_bucket(p_tenant_id text, p_kind text, p_rate numeric)
returns regclass
language plpgsql
as $$
declare
    v_name text := format('_bucket_%s_%s', p_kind, substr(md5(p_tenant_id), 1, 20));
    v_bucket regclass;
begin
    if p_rate is null then
        execute format('drop sequence if exists jobctl.%I', v_name);
        return null;
    end if;
    execute format('create sequence if not exists jobctl.%I as bigint minvalue 0 start 0', v_name);
    v_bucket := format('jobctl.%I', v_name)::regclass;
    perform setval(v_bucket, 0, false);  -- full: the time unit (1 / rate) may have changed
    return v_bucket;
end
$$;
