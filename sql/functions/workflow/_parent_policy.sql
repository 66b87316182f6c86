-- jobctl._parent_policy: what a dead or cancelled parent does to a waiting child, as the
-- cancel_on_failure flag: 'cancel' (true: the child is cancelled, and so on downstream) or 'wait'
-- (false: the child waits on; a retry of the parent that completes releases it). NULL is 'cancel'.
-- Anything else is JC001 naming p_field.
create or replace function jobctl._parent_policy(p_policy text, p_field text default 'on_parent_failure')
returns boolean
language plpgsql
immutable
as $$
begin
    if p_policy is null or p_policy = 'cancel' then
        return true;
    elsif p_policy = 'wait' then
        return false;
    end if;
    raise exception using errcode = 'JC001',
        message = format('%s must be cancel or wait, not %s', p_field, left(p_policy, 50)),
        detail = format('field: %s', p_field),
        hint = 'Nothing was submitted. cancel: a dead or cancelled parent cancels its dependents; wait: they wait for a retry.';
end
$$;
