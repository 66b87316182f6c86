-- jobctl._hint_queue_limit: the NOTIFY queue's usage (pg_notification_queue_usage, 0 to 1) above
-- which no wake-up hint is sent (jobctl._notify) and jobctl doctor warns: the setting
-- jobctl.hint_queue_limit, a number from 0 to 1; unset or anything else, 0.5 (a submit never fails
-- on it). A SQL function the planner inlines.
create or replace function jobctl._hint_queue_limit()
returns float8
language sql
stable
as $$
    select case
        when current_setting('jobctl.hint_queue_limit', true) ~ '^\s*(0?\.[0-9]{1,15}|[01](\.[0-9]{0,15})?)\s*$'
            then least(current_setting('jobctl.hint_queue_limit', true)::float8, 1)
        else 0.5
    end
$$;
