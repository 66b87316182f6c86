-- jobctl.hint_tags: the tags of the given queues' wake-up hints (jobctl._notify), in input order,
-- for a worker that listens on channel jobctl for its queues only.
create or replace function jobctl.hint_tags(queues text[])
returns text[]
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(array_agg(jobctl._hint_tag(q.queue) order by q.i), '{}')
    from unnest(hint_tags.queues) with ordinality as q (queue, i)
$$;

comment on function jobctl.hint_tags(text[]) is
'The tags that wake-up hints on channel jobctl carry for the given queues, in input order. A hint''s
payload is its queue''s tag, not its name (any login may LISTEN); a worker with a queue filter wakes on its queues''
tags.
Errors: none.
Example:
listen jobctl;
select jobctl.hint_tags(array[''email'', ''reports'']);';
