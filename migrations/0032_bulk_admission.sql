-- 0032_bulk_admission: the bulk calls (cancel_jobs, retry_jobs) admit the concurrency keys of the
-- jobs they acted on once, at the end of the batch, instead of at each job: a batch that held a key
-- while it waited for another job's rows could close a lock cycle through a third transaction queued
-- for that key, which the deadlock detector then killed (docs/lab-notes.md, 2026-12-03). Immutable
-- once landed: later changes go into a new numbered migration.
--
-- _cancel and _retry gain a parameter (p_admit); a new signature is a new function, so the old ones
-- go (if there: a fresh install creates functions only after every migration), and the function
-- files create the new ones in the same migrate run.
drop function if exists jobctl._cancel(bigint, text[]);
drop function if exists jobctl._retry(bigint, text[], boolean);
