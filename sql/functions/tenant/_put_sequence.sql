-- jobctl._put_sequence: one of a tenant's or a queue's sequences (a rate bucket, whose increment is
-- one token's cost in microseconds, see jobctl._bucket_room; or a max_pending counter, increment 1):
-- created when p_increment is given, given the new increment when it changed (a bucket's TAT, in
-- microseconds, stays valid, so the bucket keeps its level), dropped when p_increment is NULL.
-- ALTER and DROP wait for transactions that used the sequence, and its users wait for them: only
-- put_tenant and put_queue call this. The name is derived from the kind and the owner (a tenant id
-- or a queue), so the caller finds it again.
create or replace function jobctl._put_sequence(p_owner text, p_kind text, p_increment bigint)
returns regclass
language plpgsql
as $$
declare
    v_name text := format('_%s_%s', p_kind, substr(md5(p_owner), 1, 20));
    v_seq regclass := to_regclass(format('jobctl.%I', v_name));
begin
    if p_increment is null then
        if v_seq is not null then
            execute format('drop sequence jobctl.%I', v_name);
        end if;
        return null;
    end if;
    if v_seq is null then
        -- (starting at the increment, the first nextval counts one: a counter's value is its count)
        execute format(
            'create sequence jobctl.%I as bigint increment by %s minvalue 0 start %s', v_name, p_increment, p_increment
        );
        return format('jobctl.%I', v_name)::regclass;
    end if;
    if (select s.seqincrement from pg_catalog.pg_sequence as s where s.seqrelid = v_seq) <> p_increment then
        execute format('alter sequence jobctl.%I increment by %s', v_name, p_increment);
    end if;
    return v_seq;
end
$$;
