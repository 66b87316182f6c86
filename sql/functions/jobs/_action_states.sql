-- jobctl._action_states: the states of the jobs an action acts on: retry (retry_job, retry_jobs),
-- cancel (cancel_job, cancel_jobs) and delete (delete_jobs); NULL for any other action. The one home
-- of the rule: those functions, count_jobs and job_actions (what the dashboard offers) ask it. A SQL
-- function the planner inlines and folds to a constant.
create or replace function jobctl._action_states(p_action text)
returns text[]
language sql
immutable
parallel safe
as $$
    select case p_action
        when 'retry' then array['failed', 'dead', 'cancelled']
        when 'cancel' then array['pending', 'failed', 'running', 'waiting']
        when 'delete' then array['completed', 'dead', 'cancelled']
    end
$$;
