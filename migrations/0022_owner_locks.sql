-- 0022_owner_locks: jobctl's mutual exclusion moves from advisory locks to row locks on a table
-- only the schema owner can touch, and wake-up hints carry an opaque tag instead of the queue name.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- pg_advisory_lock is executable by PUBLIC: any login of the database, with no jobctl role at all,
-- could take the keys jobctl used (19011 to 19018) and hold up dedup submits, a tenant's claims or
-- the shared lane list. A row lock needs UPDATE on the table (SELECT ... FOR UPDATE, FOR SHARE and
-- FOR KEY SHARE all do), and nobody but the owner has any privilege on jobctl._lock, so only
-- jobctl's own functions can hold one. Each lock is a fixed row: a name, and a bucket (a hash of
-- the locked thing, modulo the name's bucket count; 0 for the singletons), made here so that no
-- locker ever inserts (an insert would wait for a concurrent inserter, and a try-lock must not
-- wait). Logged: an unlogged table is emptied by a crash, and a missing row would lock nothing.
-- A row lock is never an update: the rows get no new versions, only a locker's transaction id.
create table jobctl._lock (
    name text not null,
    bucket integer not null,
    primary key (name, bucket)
);
comment on table jobctl._lock is
'The rows jobctl''s functions lock for mutual exclusion (docs/security.md, Locks): one per singleton and per hash
bucket of a keyed lock. Only the schema owner has privileges on it.';

insert into jobctl._lock (name, bucket)
select
    n.name,
    b.bucket
from (
    values
    -- singletons (try-locks, one holder at a time)
    ('reap', 1), ('maintain', 1), ('rotate', 1), ('hint-busy', 1),
    -- keyed, by hash bucket
    ('dedup', 256),       -- submits sharing a dedup key's bucket wait for each other
    ('claim-tenant', 4096),  -- a limited tenant's claims, one claimer at a time (try)
    ('claim-queue', 4096),   -- a limited queue's claims, one claimer at a time (try)
    ('lanes', 1024),      -- one refresher of a queue filter's shared lane list (try)
    ('hint', 4096),       -- one hint sender per queue at a time (try)
    ('key', 16384)        -- a concurrency key's admissions, one at a time (wait)
) as n (name, buckets)
cross join lateral generate_series(0, n.buckets - 1) as b (bucket)
order by 1, 2;

-- jobctl.tick's lock: the table itself, locked in EXCLUSIVE mode (NOWAIT). Workers tick a few times
-- a second, mostly finding nothing to do; a table lock, unlike a row lock, takes no transaction id
-- and writes no WAL, so an idle tick stays free. LOCK TABLE needs privileges on the table too.
create table jobctl._tick_lock ();
comment on table jobctl._tick_lock is 'Empty; jobctl.tick locks it so that one tick runs at a time.';

-- The secret that makes a hint's tag (jobctl.hint_tags): a login that may LISTEN (any login) sees
-- the tags, not the queue names, and cannot compute a tag without the secret.
create table jobctl._hint_key (
    only_row boolean primary key default true check (only_row),
    secret text not null
);
insert into jobctl._hint_key (secret) values (replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
