-- jobctl._failure: how an attempt that ended for p_cause fails: the last_error written, whether a
-- retry may follow (attempts left permitting) and whether it is due at once. The one home of those
-- rules for fail_job and the reaper:
-- - NULL: its handler failed: p_error, retried after the backoff unless p_retryable is false (a
--   handler's own statement, such as the worker's PermanentError);
-- - timed_out: it ran past its timeout (its worker stopped it, or the reaper found it): one message,
--   retried after the backoff;
-- - lease_expired (the reaper): its worker stopped heartbeating: retried at once;
-- - refused: its payload or its result cannot be taken (the worker could not decode the one, or
--   store the other): no retry would do better, so dead at once, p_error kept.
-- A SQL function the planner inlines.
create or replace function jobctl._failure(
    p_cause text, p_error text, p_retryable boolean,
    out error text, out retryable boolean, out now_due boolean
)
language sql
immutable
parallel safe
as $$
    select
        case p_cause
            when 'timed_out' then 'timed out: ran past its timeout'
            when 'lease_expired' then 'lease expired: the worker stopped heartbeating'
            else left(coalesce(p_error, 'failed'), 10000)
        end,
        p_retryable and p_cause is distinct from 'refused',
        p_cause is not distinct from 'lease_expired'
$$;
