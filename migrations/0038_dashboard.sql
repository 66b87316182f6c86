-- Issue 33's dashboard items. jobctl.job_overview gains a last column, waiting (the jobs waiting for
-- their parents or their batch, which no other column counted): a function's columns change only by
-- dropping it; sql/functions/job_overview.sql makes it again in the same migrate.
drop function if exists jobctl.job_overview(interval, text, text);
