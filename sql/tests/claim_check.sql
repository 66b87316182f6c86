-- jobctl._claim_check: the "check" step of claim_job: each argument's bound, at the bound and past
-- it (JC001 naming the argument), and the isolation level (JC007: claim_job_repeatable_read.sql).
begin;
select plan(13);

select has_function('jobctl', '_claim_check', array['text', 'text[]', 'integer', 'interval'], '_claim_check exists');

select lives_ok(
    $$select jobctl._claim_check(repeat('w', 200), null, 1000, '1 day')$$,
    'worker_id of 200 characters, max_jobs 1000, lease of 1 day: accepted'
);
select lives_ok(
    $$select jobctl._claim_check('w', array['q'], 1, '1 microsecond')$$,
    'max_jobs 1 and the shortest lease: accepted'
);
select throws_ok(
    $$select jobctl._claim_check(null, null, 1, '30 seconds')$$, 'JC001',
    'worker_id must be a non-empty string of at most 200 characters', 'a NULL worker_id'
);
select throws_ok(
    $$select jobctl._claim_check('', null, 1, '30 seconds')$$, 'JC001',
    'worker_id must be a non-empty string of at most 200 characters', 'an empty worker_id'
);
select throws_ok(
    $$select jobctl._claim_check(repeat('w', 201), null, 1, '30 seconds')$$, 'JC001',
    'worker_id must be a non-empty string of at most 200 characters', 'a worker_id of 201 characters'
);
select throws_ok(
    $$select jobctl._claim_check('w', null, 0, '30 seconds')$$, 'JC001',
    'max_jobs must be from 1 to 1000, not 0', 'max_jobs 0'
);
select throws_ok(
    $$select jobctl._claim_check('w', null, 1001, '30 seconds')$$, 'JC001',
    'max_jobs must be from 1 to 1000, not 1001', 'max_jobs 1001'
);
select throws_ok(
    $$select jobctl._claim_check('w', null, null, '30 seconds')$$, 'JC001',
    'max_jobs must be from 1 to 1000, not NULL', 'max_jobs NULL'
);
select throws_ok(
    $$select jobctl._claim_check('w', null, 1, '0 seconds')$$, 'JC001',
    'lease must be positive and at most 1 day', 'a zero lease'
);
select throws_ok(
    $$select jobctl._claim_check('w', null, 1, '1 day 1 microsecond')$$, 'JC001',
    'lease must be positive and at most 1 day', 'a lease over a day'
);
select throws_ok(
    $$select jobctl._claim_check('w', null, 1, null)$$, 'JC001',
    'lease must be positive and at most 1 day', 'a NULL lease'
);
select throws_ok(
    $$select jobctl._claim_check('w', array['q', null], 1, '30 seconds')$$, 'JC001',
    'queues must not contain NULL', 'a NULL among the queues'
);

select * from finish();
rollback;
