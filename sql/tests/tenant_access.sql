-- jobctl.grant_tenant, revoke_tenant, list_tenant_grants and forget_subject as the schema owner sees
-- them; what the grants do for the roles' own sessions: tests/test_security.py.
begin;
select plan(18);
set local jit = off;

select has_function('jobctl', 'grant_tenant', array['text', 'text'], 'grant_tenant(role_name, tenant_id) exists');
select has_function('jobctl', 'revoke_tenant', array['text', 'text'], 'revoke_tenant(role_name, tenant_id) exists');
select has_function('jobctl', 'list_tenant_grants', array[]::text[], 'list_tenant_grants() exists');
select has_function('jobctl', 'forget_subject', array['text', 'text'], 'forget_subject(tenant_id, subject_key) exists');
select is_empty(
    $$select p.proname from pg_catalog.pg_proc as p
      where p.pronamespace = 'jobctl'::regnamespace
        and p.proname in ('grant_tenant', 'revoke_tenant', 'list_tenant_grants', 'forget_subject')
        and obj_description(p.oid, 'pg_proc') is null$$,
    'each has a comment'
);

create role tap_access_role;
select is(jobctl.grant_tenant('tap_access_role', 'tap_access_a'), true, 'a grant is made');
select is(jobctl.grant_tenant('tap_access_role', 'tap_access_a'), false, 'and made once');
select is(jobctl.grant_tenant('tap_access_role'), true, 'NULL: every tenant');
select results_eq(
    $$select tenant_id from jobctl.list_tenant_grants() where role_name = 'tap_access_role'$$,
    $$values (null::text), ('tap_access_a')$$,
    'list_tenant_grants: by role, the every-tenant grant first'
);
select throws_ok(
    $$select jobctl.grant_tenant('tap_access_nobody', 'x')$$, 'JC001', 'role_name: no role tap_access_nobody',
    'an unknown role is refused, naming the field'
);
select throws_ok(
    $$select jobctl.grant_tenant('tap_access_role', '')$$, 'JC001', null, 'an empty tenant_id is refused'
);
select is(jobctl.revoke_tenant('tap_access_role', 'tap_access_a'), true, 'a revoke takes the grant back');
select is(jobctl.revoke_tenant('tap_access_role', 'tap_access_a'), false, 'and finds nothing the second time');
select results_eq(
    $$select action, tenant_id from jobctl.audit_log
      where detail ->> 'role' = 'tap_access_role' order by audit_id$$,
    $$values ('grant_tenant', 'tap_access_a'), ('grant_tenant', null), ('revoke_tenant', 'tap_access_a')$$,
    'grants and revokes that changed something are audited'
);

-- forget_subject: a pending job of the subject goes, another subject's stays
select jobctl.submit_job('tap_access_a', 'tap_access_q', '{"who": 1}', subject_key => 'person-1');
select jobctl.submit_job('tap_access_a', 'tap_access_q', '{"who": 2}', subject_key => 'person-2');
select results_eq(
    $$select cancelled, deleted from jobctl.forget_subject('tap_access_a', 'person-1')$$,
    $$values (1, 1)$$,
    'forget_subject cancels and deletes the subject''s pending job'
);
select results_eq(
    $$select subject_key from jobctl.job where tenant_id = 'tap_access_a'$$,
    $$values ('person-2')$$,
    'the other subject''s job stays'
);
select throws_ok(
    $$select * from jobctl.forget_subject('tap_access_a', '')$$, 'JC001',
    'subject_key must be a string of 1 to 500 characters', 'an empty subject_key is refused'
);
select results_eq(
    $$select detail from jobctl.audit_log where action = 'forget_subject' and tenant_id = 'tap_access_a'$$,
    $$values ('{"cancelled": 1, "deleted": 1}'::jsonb)$$,
    'forget_subject is audited with its counts only'
);

select * from finish();
rollback;
