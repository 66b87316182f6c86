-- jobctl._event_check: raise JC001 unless p_event is an event name: 1 to 200 printable characters
-- (await_event, emit_event).
create or replace function jobctl._event_check(p_event text)
returns void
language plpgsql
immutable
as $$
begin
    if p_event is null or length(p_event) not between 1 and 200 or p_event ~ jobctl._unprintable() then
        raise exception using errcode = 'JC001', message = 'event must be 1 to 200 printable characters',
            detail = 'field: event';
    end if;
end
$$;
