-- jobctl._link_parents: the edges of new waiting jobs (p_children, made by this transaction's
-- jobctl._submit) to the parents in their depends_on. Each parent made earlier is locked (FOR
-- SHARE) before it is read, so it cannot end between the read and the edge's insert: a parent that
-- completes after the lock is granted finds the edge and releases the child. A completed parent
-- needs no edge; a dead or cancelled one cancels the children that asked for it
-- (cancel_on_failure) and keeps the others waiting on it. Children left without an edge are
-- released at once. A parent must be a job of the child's tenant: an unknown one, or another
-- tenant's, is JC001 (nothing is submitted).
-- Locks: the parents' job rows (FOR SHARE). Writes: _edge, through the callees _waiting, job, the
-- queue tables.
create or replace function jobctl._link_parents(p_children bigint[])
returns void
language plpgsql
set jit = off
as $$
declare
    v_bad_child bigint;
    v_bad_parent bigint;
    v_doomed bigint[];
    v_tied bigint[];  -- the children with an edge (or a parent that is not their tenant's)
    v_free bigint[];
begin
    with wanted as (
        select c.job_id as child_id, c.tenant_id, p.parent_id, w.cancel_on_failure
        from jobctl.job as c
        inner join jobctl._waiting as w on w.job_id = c.job_id
        cross join lateral unnest(c.depends_on) as p (parent_id)
        where c.job_id = any(p_children) and c.created_at = now()
    ),
    parent as (
        select j.job_id, j.tenant_id, j.state from jobctl.job as j
        where j.job_id in (select wanted.parent_id from wanted)
        for share
    ),
    link as (
        select w.child_id, w.parent_id, w.cancel_on_failure,
            case when p.tenant_id = w.tenant_id then p.state end as state
        from wanted as w
        left join parent as p on p.job_id = w.parent_id
    ),
    edge as (
        insert into jobctl._edge (parent_id, child_id)
        select l.parent_id, l.child_id from link as l where l.state <> 'completed'
    )
    select
        (array_agg(l.child_id) filter (where l.state is null))[1], (array_agg(l.parent_id) filter (where l.state is null))[1],
        array_agg(distinct l.child_id) filter (where l.cancel_on_failure and l.state in ('dead', 'cancelled')),
        array_agg(distinct l.child_id) filter (where l.state is distinct from 'completed')
    into v_bad_child, v_bad_parent, v_doomed, v_tied
    from link as l;
    if v_bad_child is not null then
        raise exception using errcode = 'JC001',
            message = format('depends_on: job %s is not a job of tenant %s', v_bad_parent,
                (select j.tenant_id from jobctl.job as j where j.job_id = v_bad_child and j.created_at = now())),
            detail = 'field: depends_on',
            hint = 'Nothing was submitted. A job can depend only on hot jobs of its own tenant (jobctl.get_job).';
    end if;
    if v_doomed is not null then
        perform jobctl._cancel_waiting(v_doomed, 'cancelled: a job it depends on was dead or cancelled');
    end if;
    select array_agg(c.id) into v_free from unnest(p_children) as c (id) where c.id <> all(coalesce(v_tied, '{}'));
    if v_free is not null then
        perform jobctl._unblock_children(v_free, false);
    end if;
end
$$;
