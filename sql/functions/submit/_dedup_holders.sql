-- jobctl._dedup_holders: the "dedup" step of jobctl._submit, for a call with dedup keys: which specs
-- become jobs (specs: the first of each key in the call, unless a committed job holds the key) and
-- what each spec of the call answers (answers: -k the k-th new job, > 0 the id of the job holding its
-- key; dups: whether that is another spec's or an older job); names: p_names (submit_workflow's) of
-- the specs that become jobs. Submits sharing a key wait for each other here (the dedup lock,
-- jobctl._wait_lock: a tenant's keys hash into 256 buckets, locked in order, so two calls cannot
-- deadlock); the statements after it then see the winner's committed job (READ COMMITTED takes a
-- new snapshot per statement), so REPEATABLE READ is refused (JC006). A key's holder may be a job
-- on the other shard of the tenant's move (jobctl._move_key).
-- Calls: _wait_lock, _refuse_moved (a tenant that moved while this call waited).
-- Locks: the dedup lock on each key (_tenant_lock rows, waited for, to the end of the transaction).
-- Writes: _tenant_lock (a lock row's first use).
create or replace function jobctl._dedup_holders(
    p_specs jobctl._job_spec[], p_names text[], p_now timestamptz,
    specs out jobctl._job_spec[], answers out bigint[], dups out boolean[], names out text[]
)
language plpgsql
as $$
#variable_conflict use_column
declare
    v_moved text;
begin
    if current_setting('transaction_isolation') = 'repeatable read' then
        raise exception using errcode = 'JC006',
            message = 'dedup_key needs READ COMMITTED or SERIALIZABLE isolation, not REPEATABLE READ',
            hint = 'Submit jobs with a dedup_key outside REPEATABLE READ transactions.';
    end if;
    perform jobctl._wait_lock('dedup',
        array(select s.tenant_id from unnest(p_specs) as s), array(select s.dedup_key from unnest(p_specs) as s));
    -- a move's fence may have committed while this call waited: the keys the target was handed
    -- (jobctl._move_out_keys, under these locks) do not include this call's
    select min(t.tenant_id) into v_moved from jobctl.tenant as t
    where t.tenant_id in (select s.tenant_id from unnest(p_specs) as s) and t.moved_to is not null;
    if v_moved is not null then
        perform jobctl._refuse_moved(v_moved);
    end if;

    select array_agg(p_specs[m.ord] order by m.ord) filter (where m.is_new),
        array_agg(coalesce(m.held_by, -m.k) order by m.ord),
        array_agg(not m.is_new order by m.ord)
    into specs, answers, dups
    from (
        select n.*, max(n.k_new) over (partition by n.tenant_id, n.dedup_key, n.first_ord) as k
        from (
            select h.*, case when h.is_new then count(*) filter (where h.is_new) over (order by h.ord) end as k_new
            from (
                select s.ord, s.tenant_id, s.dedup_key, s.first_ord, e.job_id as held_by,
                    e.job_id is null and (s.dedup_key is null or s.ord = s.first_ord) as is_new
                from (
                    select o.ordinality as ord, o.tenant_id, o.dedup_key, o.dedup_states, o.dedup_period,
                        case when o.dedup_key is null then o.ordinality
                            else min(o.ordinality) over (partition by o.tenant_id, o.dedup_key) end as first_ord
                    from unnest(p_specs) with ordinality as o
                ) as s
                -- the key's holder: its newest job, if in one of dedup_states and created in the
                -- current dedup_period (each unset: any); during a move of the tenant, a job on the
                -- move's other shard may hold it (jobctl._move_key: its state when recorded)
                left join lateral (
                    select l.job_id from (
                        (
                            select j.job_id, j.state, j.created_at from jobctl.job as j
                            where j.tenant_id = s.tenant_id and j.dedup_key = s.dedup_key
                            order by j.job_id desc
                            limit 1
                        )
                        union all
                        (
                            select k.job_id, k.state, k.created_at from jobctl._move_key as k
                            where k.tenant_id = s.tenant_id and k.dedup_key = s.dedup_key
                            order by k.created_at desc
                            limit 1
                        )
                        order by 3 desc, 1 desc
                        limit 1
                    ) as l
                    where (s.dedup_states is null or l.state = any(s.dedup_states))
                        and (s.dedup_period is null
                             or l.created_at >= date_bin(s.dedup_period, p_now, timestamptz '2000-01-01 00:00:00+00'))
                ) as e on s.dedup_key is not null
            ) as h
        ) as n
    ) as m;
    names := case when p_names is not null then
        array(select p_names[u.i] from unnest(dups) with ordinality as u (dup, i) where not u.dup order by u.i) end;
end
$$;
