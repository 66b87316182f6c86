-- jobctl._metrics_queues: how many tenant queues have job series of their own on /metrics
-- (jobctl.job_series; the rest are summed into one "other" series): the setting
-- jobctl.metrics_queues, a whole number from 1 to 100000; unset or anything else, 200. At 200 the
-- job series are about 1 MB a scrape whatever the number of queues (docs/operations.md, Metrics).
-- A SQL function the planner inlines.
create or replace function jobctl._metrics_queues()
returns integer
language sql
stable
as $$
    select case
        when current_setting('jobctl.metrics_queues', true) ~ '^\s*[0-9]{1,6}\s*$'
            and trim(current_setting('jobctl.metrics_queues', true))::integer between 1 and 100000
            then trim(current_setting('jobctl.metrics_queues', true))::integer
        else 200
    end
$$;
