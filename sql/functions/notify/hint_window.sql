-- jobctl._hint_window: the window, in seconds, in which a session that met another hint sender
-- sends at most one wake-up hint per queue (jobctl._notify). A worker that heard a hint claims again
-- every 50 ms for this long, so that the jobs whose hints were skipped in the window wait no longer
-- than it (tests/test_worker.py::test_a_job_whose_hint_was_skipped_starts_within_the_hint_window): it
-- reads it through jobctl.hint_window each time its listener connects. A SQL function the planner
-- inlines (no SET clause): _notify's expression is planned once a session, with the constant in it.
-- The windows are numbered from the epoch; at 0.5 s their numbers (over 3e9) never equal an int4
-- hash, which _notify relies on.
create or replace function jobctl._hint_window()
returns float8
language sql
immutable
parallel safe
as $$
    select 0.5::float8
$$;

-- jobctl.hint_window: jobctl._hint_window for the worker.
create or replace function jobctl.hint_window()
returns float8
language sql
security definer
set search_path = pg_catalog, pg_temp
immutable
parallel safe
as $$
    select jobctl._hint_window()
$$;

comment on function jobctl.hint_window() is
'The window, in seconds, in which a busy session sends at most one wake-up hint per queue: after a hint, a worker
claims again every 50 ms for this long, so that jobs whose hints were skipped start within it.
Errors: none.
Example:
select jobctl.hint_window();';
