-- jobctl._pick: the "pick" step of jobctl.claim_job, fair shares by systematic sampling. The lanes
-- in play (all but p_skip) are laid end to end, each as wide as in p_lows (lane i from p_lows[i] to
-- p_lows[i + 1], the last to p_total), and p_n points spaced evenly from p_offset (in [0, 1), a
-- random number in a claim) fall on them; width_bucket finds each point's lane by binary search. A
-- lane gets the points on it: in expectation exactly p_n * width / total, never more than one away
-- from it, and a single point picks a lane with probability width / total. O(p_n * log lanes), and
-- nothing is counted or updated: no hot row.
-- Returns the picked lanes (ascending) and the jobs wanted from each (n = wanted, rated false), or
-- NULL arrays when no lane is in play.
-- Calls: nothing. Arrays alone: reads no table, locks and writes nothing.
create or replace function jobctl._pick(
    p_lows float8[], p_total float8, p_skip integer[], p_n integer, p_offset float8
)
returns jobctl._picks
language plpgsql
immutable
set plan_cache_mode = force_generic_plan
as $$
declare
    v_idx integer[];  -- lane numbers in play, parallel to v_lows (NULL: all, in order)
    v_lows float8[] := p_lows;
    v_total float8 := p_total;
    v_pick jobctl._picks;
begin
    if cardinality(p_skip) > 0 then
        -- take the skipped lanes out and lay the rest end to end again
        select array_agg(x.i order by x.i), array_agg(x.upto - x.w order by x.i), max(x.upto)
        into v_idx, v_lows, v_total
        from (
            select y.i, y.w, sum(y.w) over (order by y.i rows unbounded preceding) as upto
            from (
                select u.i, coalesce(p_lows[u.i + 1], p_total) - p_lows[u.i] as w
                from generate_subscripts(p_lows, 1) as u (i)
                where u.i <> all(p_skip)
            ) as y
        ) as x;
    end if;
    if coalesce(v_total, 0) <= 0 then
        return v_pick;
    end if;
    if coalesce(cardinality(v_idx), cardinality(p_lows)) = 1 then
        -- a lone lane in play: simple expressions, no statement
        v_pick.lanes := array[coalesce(v_idx[1], 1)];
        v_pick.n := array[p_n];
    else
        select array_agg(p.lane order by p.lane), array_agg(p.n order by p.lane)
        into v_pick.lanes, v_pick.n
        from (
            select coalesce(v_idx[b.bucket], b.bucket) as lane, count(*)::integer as n
            from generate_series(0, p_n - 1) as j (j)
            cross join lateral (select width_bucket((p_offset + j.j) * v_total / p_n, v_lows) as bucket) as b
            group by 1
        ) as p;
    end if;
    v_pick.wanted := v_pick.n;
    v_pick.rated := false;
    return v_pick;
end
$$;
