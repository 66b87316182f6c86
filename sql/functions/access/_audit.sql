-- jobctl._audit: record an action in jobctl.audit_log: the login, and the API token when the
-- transaction acts as one (jobctl.authenticate). Writes: audit_log.
create or replace function jobctl._audit(p_action text, p_tenant text, p_detail jsonb default '{}')
returns void
language sql
as $$
    insert into jobctl.audit_log (token_id, action, tenant_id, detail)
    values (
        (
            select t.token_id from jobctl._api_token as t
            where t.token_hash = sha256(convert_to(nullif(current_setting('jobctl.api_token', true), ''), 'UTF8'))
        ),
        p_action, p_tenant, coalesce(p_detail, '{}')
    )
$$;
