-- jobctl._stat_since: the start of the counters' window that ends now: the first minute it
-- touches. Raises JC001 for a window the minutes kept (6 hours) cannot answer.
create or replace function jobctl._stat_since(p_window interval)
returns timestamptz
language plpgsql
stable
as $$
begin
    if p_window is null or p_window <= interval '0' or p_window > interval '6 hours' then
        raise exception using errcode = 'JC001',
            message = 'window must be positive and at most 6 hours (the minutes the counters keep)',
            detail = 'field: window',
            hint = 'Give an interval such as ''5 minutes''.';
    end if;
    return date_trunc('minute', now() - p_window);
end
$$;
