-- jobctl.worker_beat: a worker reports itself to the registry (jobctl._worker) every few seconds:
-- its host, pid, queues (empty or NULL: all), concurrency and jobs in flight. The first beat of a
-- worker_id registers it; a later one updates it and last_seen_at, and keeps started_at unless the
-- host or pid changed (another process took the id over). Workers serve every tenant, so the
-- registry is shared: only callers acting for every tenant list it (jobctl.list_workers). jobctl.tick
-- forgets a worker not seen for an hour; jobctl.worker_gone forgets one at once. A worker_id
-- belongs to the login that registered it (another login's beat is refused: no worker can pose as
-- another), and a login registers at most 10,000 workers at a time.
-- Locks: the worker's row. Writes: _worker (one row; beats are HOT updates).
create or replace function jobctl.worker_beat(
    worker_id text,
    host text,
    pid integer,
    queues text[],
    concurrency integer,
    in_flight integer
)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_field text;
begin
    v_field := case
        when worker_id is null or worker_id = '' or length(worker_id) > 200 or worker_id ~ jobctl._unprintable()
            then 'worker_id'
        when host is null or host = '' or length(host) > 255 or host ~ jobctl._unprintable() then 'host'
        when pid is null or pid < 0 then 'pid'
        when cardinality(queues) > 1000 or exists (
            select from unnest(queues) as q (name)
            where q.name is null or q.name = '' or length(q.name) > 200 or q.name ~ jobctl._unprintable()
        ) then 'queues'
        when concurrency is null or concurrency not between 1 and 100000 then 'concurrency'
        when in_flight is null or in_flight not between 0 and 100000 then 'in_flight'
    end;
    if v_field is not null then
        raise exception using errcode = 'JC001',
            message = format('%s is missing or out of range', v_field),
            detail = format('field: %s', v_field),
            hint = 'worker_id: 1-200 characters, host: 1-255, no control characters; pid >= 0; queues: NULL or '
                'at most 1000 names of 1-200 characters; concurrency 1..100000; in_flight 0..100000.';
    end if;
    if not exists (select from jobctl._worker as w where w.worker_id = worker_beat.worker_id)
       and (select count(*) from jobctl._worker as w where w.login = session_user) >= 10000 then
        raise exception using errcode = 'JC001',
            message = format('login %s has 10000 workers registered; no more until some are gone', session_user),
            detail = 'field: worker_id',
            hint = 'Reuse worker ids, or call jobctl.worker_gone when a worker stops.';
    end if;
    if exists (select from jobctl._worker as w where w.worker_id = worker_beat.worker_id and w.login <> session_user) then
        raise exception using errcode = '42501',
            message = format('worker %s is registered by another login', worker_beat.worker_id),
            detail = 'field: worker_id',
            hint = 'Give each worker an id of its own.';
    end if;
    insert into jobctl._worker as w (worker_id, host, pid, queues, concurrency, in_flight)
    values (
        worker_id, host, pid, array(select distinct q.name from unnest(queues) as q (name) order by 1),
        concurrency, in_flight
    )
    on conflict on constraint _worker_pkey do update
    set host = excluded.host,
        pid = excluded.pid,
        queues = excluded.queues,
        concurrency = excluded.concurrency,
        in_flight = excluded.in_flight,
        started_at = case when w.host = excluded.host and w.pid = excluded.pid then w.started_at else now() end,
        last_seen_at = now()
    where w.login = session_user;  -- (another login's row: refused above, unless it took the id meanwhile)
end
$$;

comment on function jobctl.worker_beat(text, text, integer, text[], integer, integer) is
'A worker''s heartbeat into the registry of workers: its host, pid, queues (NULL or empty: all),
concurrency and jobs in flight; last_seen_at becomes now. The first beat of a worker_id registers it (started_at);
a beat from another host or pid under the same id starts it afresh. A worker not seen for an hour is forgotten by
jobctl.tick; jobctl.worker_gone forgets it at once. Workers beat every few seconds. A worker_id belongs to the
login that registered it; a login has at most 10,000 workers registered at a time.
Errors: JC001 naming the field (worker_id, host, pid, queues, concurrency, in_flight) or a login''s 10,001st
worker, 42501 a worker_id another login registered.
Example:
select jobctl.worker_beat(''web-1:4242'', ''web-1'', 4242, array[''email''], 10, 3);';
