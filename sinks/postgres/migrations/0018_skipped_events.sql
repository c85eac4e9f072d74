-- An event a writer skips because its user was erased is tombstoned by its id, as the events
-- an erasure removes are (migration 0007).
--
-- A turn acknowledged before an erasure and reached by a lagging worker after it is skipped
-- (`memstream_forgotten`: received before any consent). It was never stored, so the erasure did
-- not record its id: a client that retried it under the same id after the user's consent got
-- it stored, with the time of its first attempt (a red team, issue 45). Every writer now asks
-- `memstream_skip_forgotten`, which answers which events are forgotten and records the ones
-- forgotten for their user's erasure in `erased_events` (against the user's latest erasure),
-- so a retry is refused by its id in every consumer: each reaches the original first, in the
-- partition's order. The app role may not write tombstones itself: the function records only
-- what `memstream_forgotten` says is forgotten.
CREATE FUNCTION memstream_skip_forgotten(p_tenant text, p_events uuid[], p_users text[], p_times timestamptz[])
RETURNS SETOF uuid
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF p_tenant IS NULL OR p_tenant IS DISTINCT FROM memstream_current_tenant() THEN
        RAISE EXCEPTION 'app.tenant_id is not the tenant of these events' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- A data-modifying WITH runs once and to completion, whether or not its rows are read.
    RETURN QUERY
    WITH found AS (
        SELECT i.event_id, i.user_id FROM unnest(p_events, p_users, p_times) AS i(event_id, user_id, at)
         WHERE memstream_forgotten(p_tenant, i.user_id, i.event_id, i.at)
    ), recorded AS (
        INSERT INTO erased_events (tenant_id, event_id, erasure_id)
        SELECT p_tenant, f.event_id, e.erasure_id
          FROM found f
          CROSS JOIN LATERAL (SELECT x.erasure_id FROM erasures x
                               WHERE x.tenant_id = p_tenant AND x.user_ref = memstream_user_ref(p_tenant, f.user_id)
                               ORDER BY x.erased_at DESC LIMIT 1) e
        ON CONFLICT DO NOTHING
    )
    SELECT DISTINCT f.event_id FROM found f;
END
$$;
REVOKE EXECUTE ON FUNCTION memstream_skip_forgotten(text, uuid[], text[], timestamptz[]) FROM PUBLIC;
