-- jobctl._cron_instants: the instants at which the wall time p_local occurs in zone p_zone. Most
-- wall times occur once (first_at = last_at); one in the hour repeated when the clocks go back
-- occurs twice (first_at < last_at); one in the hour skipped when they go forward never occurs
-- (skipped), and both are then the first instant after the gap (the transition). The offsets a
-- day before and a day after p_local are the candidates: a zone changing its offset twice within
-- two days is not handled.
create or replace function jobctl._cron_instants(
    p_local timestamp, p_zone text, out first_at timestamptz, out last_at timestamptz, out skipped boolean
)
language plpgsql
stable
as $$
declare
    v_u timestamptz := p_local at time zone 'UTC';
    v_before interval;
    v_after interval;
    v_a timestamptz;
    v_b timestamptz;
    v_lo bigint;
    v_hi bigint;
    v_mid bigint;
begin
    skipped := false;
    if p_zone = 'UTC' then
        first_at := v_u;
        last_at := v_u;
        return;
    end if;
    -- a zone's offset at an instant x is (x at time zone zone) - (x at time zone 'UTC')
    v_before := ((v_u - interval '1 day') at time zone p_zone) - ((v_u - interval '1 day') at time zone 'UTC');
    v_after := ((v_u + interval '1 day') at time zone p_zone) - ((v_u + interval '1 day') at time zone 'UTC');
    v_a := v_u - v_before;
    v_b := v_u - v_after;
    v_a := case when (v_a at time zone p_zone) = p_local then v_a end;
    v_b := case when (v_b at time zone p_zone) = p_local then v_b end;
    if v_a is not null or v_b is not null then
        first_at := least(v_a, v_b);
        last_at := greatest(v_a, v_b);
        return;
    end if;
    -- in a gap (v_after > v_before): the transition lies in (p_local - v_after, p_local - v_before];
    -- transitions fall on whole seconds, which a bisection finds
    v_lo := extract(epoch from v_u - v_after)::bigint;
    v_hi := extract(epoch from v_u - v_before)::bigint;
    if v_hi <= v_lo then
        -- (two offset changes within two days: PostgreSQL's reading of the wall time)
        first_at := p_local at time zone p_zone;
        last_at := first_at;
        return;
    end if;
    while v_hi - v_lo > 1 loop
        v_mid := (v_lo + v_hi) / 2;
        if (to_timestamp(v_mid) at time zone p_zone) - (to_timestamp(v_mid) at time zone 'UTC') = v_after then
            v_hi := v_mid;
        else
            v_lo := v_mid;
        end if;
    end loop;
    first_at := to_timestamp(v_hi);
    last_at := first_at;
    skipped := true;
end
$$;
