-- jobctl._debounce_repeats: the "debounce" step of jobctl._submit, for a call with dedup keys: each
-- repeat of a key (p_dups) in replace or preserve_run_at mode updates its holder (p_answers, as
-- jobctl._dedup_holders gives them; -k is p_ids[k], the k-th new job) while it is pending
-- (jobctl._debounce), in input order: the last repeat's payload wins. A holder that is no longer
-- pending is left as it is. The caller holds the keys' dedup lock.
-- Calls: _debounce (each repeat to debounce). Locks: through _debounce the holder's queue row.
-- Writes: through _debounce the holder's job row, its queue row moved, _stat_delta.
create or replace function jobctl._debounce_repeats(
    p_specs jobctl._job_spec[], p_answers bigint[], p_dups boolean[], p_ids bigint[]
)
returns void
language plpgsql
as $$
#variable_conflict use_column
declare
    v_repeat record;
begin
    for v_repeat in
        select case when u.answer > 0 then u.answer else p_ids[-u.answer] end as job_id, u.ord
        from unnest(p_answers, p_dups) with ordinality as u (answer, dup, ord)
        where u.dup and (p_specs[u.ord::integer]).dedup_mode in ('replace', 'preserve_run_at')
        order by u.ord
    loop
        perform jobctl._debounce(v_repeat.job_id, p_specs[v_repeat.ord::integer]);
    end loop;
end
$$;
