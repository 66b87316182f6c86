-- jobctl._cron_field: the allowed values of one cron field, sorted: a comma list of `*`, `n`,
-- `a-b`, each optionally `/step`, and `n/step`; values p_lo..p_hi, or names (p_names, numbered
-- from p_first). `*` and `n/step` end at p_end (day-of-week: 6, though 7 may be written for
-- Sunday). Anything else raises JC001 naming the field.
create or replace function jobctl._cron_field(
    p_text text, p_field text, p_lo integer, p_hi integer, p_end integer, p_names text[], p_first integer
)
returns integer[]
language plpgsql
immutable
as $$
declare
    v_item text;
    v_m text[];
    v_a integer;
    v_b integer;
    v_step integer;
    v_out integer[] := '{}';
begin
    foreach v_item in array string_to_array(p_text, ',') loop
        -- (start)(-end)?(/step)? where start is * or a number or a name
        v_m := regexp_match(v_item, '^(\*|[0-9]{1,2}|[a-z]{3})(?:-([0-9]{1,2}|[a-z]{3}))?(?:/([0-9]{1,2}))?$');
        exit when v_m is null;
        v_a := case when v_m[1] = '*' then p_lo when v_m[1] ~ '^[0-9]' then v_m[1]::integer
            else array_position(p_names, v_m[1]) + p_first - 1 end;
        v_b := case when v_m[1] = '*' then p_end when v_m[2] is null and v_m[3] is null then v_a
            when v_m[2] is null then p_end when v_m[2] ~ '^[0-9]' then v_m[2]::integer
            else array_position(p_names, v_m[2]) + p_first - 1 end;
        v_step := coalesce(v_m[3]::integer, 1);
        if v_a is null or v_b is null or v_step < 1 or (v_m[1] = '*' and v_m[2] is not null)
           or v_a < p_lo or v_b > p_hi or v_a > v_b then
            v_m := null;
            exit;
        end if;
        v_out := v_out || array(select generate_series(v_a, v_b, v_step));
    end loop;
    if v_m is null or cardinality(v_out) = 0 then
        raise exception using errcode = 'JC001',
            message = format('cron %s field %L is invalid', p_field, p_text),
            detail = 'field: cron',
            hint = format('Values %s-%s%s; a comma list of *, n, a-b, each with an optional /step.',
                p_lo, p_hi, case when p_names is null then '' else ' or ' || array_to_string(p_names, ', ') end);
    end if;
    return array(select distinct v from unnest(v_out) as v order by 1);
end
$$;
