-- 0004_lane_cache_fresh_until: a lane cache row stores until when it is fresh, not when it was made.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- claim_job then reads a fresh row with one primary-key probe (`fresh_until > now`) and calls
-- jobctl._lanes only to refresh a stale one; the freshness rule (100 ms + 0.2 ms per lane, at most
-- 1 s) lives in _lanes alone. The rows are a cache: emptying it costs one listing per queue filter.
truncate jobctl._lane_cache;
alter table jobctl._lane_cache rename column refreshed_at to fresh_until;
