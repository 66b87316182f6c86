-- 0043_lane_generation: a shared lane list records the generation of the lane settings it was
-- listed under. Immutable once landed: later changes go into a new numbered migration.
--
-- A pause (of a queue or a tenant), a put_queue and a tenant move's steps empty the lane cache so
-- that the next claim lists the lanes afresh. A claimer that began listing before such a change
-- committed read the old settings, and could share its listing after the emptying: claims sent
-- after pause_queue returned then took the paused queue's jobs for the list's freshness (100 ms or
-- more). Each such change now moves jobctl._lane_generation on, in its transaction; a listing reads
-- the generation in the statement that reads the settings, and a list of an older generation than
-- the current one is never used (jobctl._lanes). The cache is emptied first: its rows predate the
-- column.
create table jobctl._lane_generation (
    one boolean primary key default true check (one),
    generation bigint not null default 0
);
insert into jobctl._lane_generation default values;
truncate jobctl._lane_cache;
alter table jobctl._lane_cache add column generation bigint not null default 0;
