-- A user's memory as a timeline, newest first (GET /v1/memories): every episode of the user —
-- archived originals included — in (event time, event id) order, so that a page after a cursor
-- is one index range, whatever the page's depth (keyset pagination, no OFFSET). The partial
-- index episodes_user_day holds only live episodes.
CREATE INDEX episodes_timeline ON episodes (tenant_id, user_id, created_at, event_id);
