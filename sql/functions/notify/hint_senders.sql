-- jobctl.hint_senders: the backends whose wake-up hints a listener acts on: sessions of jobctl's
-- roles (a member of jobctl_reader or jobctl_worker; jobctl_writer, jobctl_api and jobctl_admin are
-- members of jobctl_reader), of superusers and of the schema's owner (pg_cron's and pg_partman's jobs).
-- Any login may NOTIFY on channel jobctl, and a hint's payload (jobctl._hint_tag) can be heard and
-- sent again; a NOTIFY carries its sender's process id, which a worker checks against this list
-- (python/jobctl/worker/claiming.py), so a stranger's replayed tags wake nothing.
-- Reads pg_stat_activity (its pid and usesysid columns are visible to every login); writes nothing.
create or replace function jobctl.hint_senders()
returns int[]
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(array_agg(a.pid order by a.pid), '{}')
    from pg_catalog.pg_stat_get_activity(null) as a
    join pg_catalog.pg_roles as r on r.oid = a.usesysid
    where r.rolsuper
        or r.oid = (select n.nspowner from pg_catalog.pg_namespace as n where n.nspname = 'jobctl')
        or pg_catalog.pg_has_role(r.oid, 'jobctl_reader', 'member')
        or pg_catalog.pg_has_role(r.oid, 'jobctl_worker', 'member')
$$;

comment on function jobctl.hint_senders() is
'The process ids of the sessions whose wake-up hints on channel jobctl a listener should act on:
sessions of jobctl''s roles, of superusers and of the schema''s owner. Any login may NOTIFY on channel
jobctl and send a heard tag again; a notification carries its sender''s process id, so a claim loop
that LISTENs ignores a hint whose sender is not in this list (ask again when an unknown sender
appears, at most a few times a second).
Errors: none.
Example:
select jobctl.hint_senders();';
