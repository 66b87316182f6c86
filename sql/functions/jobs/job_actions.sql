-- jobctl.job_actions: what a job in a state allows (jobctl._action_states, read the other way), for
-- callers that offer the actions, such as the dashboard's job page: they ask, not restate the rule.
create or replace function jobctl.job_actions(state text)
returns text[]
language plpgsql
security definer
immutable
parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if state is null or state <> all(array['waiting', 'pending', 'running', 'completed', 'failed', 'dead', 'cancelled']) then
        raise exception using errcode = 'JC001',
            message = format('state must be one of waiting, pending, running, completed, failed, dead, cancelled, not %s',
                coalesce(state, 'NULL')),
            detail = 'field: state';
    end if;
    return array(
        select a.action from unnest(array['retry', 'cancel', 'delete']) with ordinality as a (action, i)
        where job_actions.state = any(jobctl._action_states(a.action))
        order by a.i
    );
end
$$;

comment on function jobctl.job_actions(text) is
'The actions a job in this state allows, of retry (retry_job, retry_jobs), cancel (cancel_job, cancel_jobs) and
delete (delete_jobs), in that order: what those functions would act on.
Errors: JC001 a NULL or unknown state.
Example:
select jobctl.job_actions(''dead'');  -- {retry,delete}';
