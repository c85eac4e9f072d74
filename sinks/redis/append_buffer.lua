-- Append turns to one session's buffer, atomically. Turns are never dropped here to keep
-- the window: the ones beyond it stay until the summariser has folded them into the rolling
-- summary (summarize-before-trim, fold_buffer.lua); only past a hard cap are the oldest
-- dropped (a bounded fallback when the summariser is down; they remain in episodic memory).
-- KEYS[1]  the buffer: a sorted set, score = event time in microseconds, member = the turn as
--          canonical JSON (a redelivered turn is the same member: ZADD is idempotent).
-- KEYS[2]  the trim mark: hash {score, member} of the newest turn ever folded or dropped.
--          A turn at or below it arrives too late (it would belong inside the summary) and is
--          ignored; the buffer stays a contiguous run of the session's newest turns.
-- KEYS[3]  the pending-request flag (one compaction request in flight per session).
-- ARGV[1] max turns  ARGV[2] max tokens  ARGV[3] ttl s (0 = none)  ARGV[4] hard cap (turns)
-- ARGV[5] request-flag ttl ms  ARGV[6..] pairs of (score, member) with a numeric "tokens" field.
-- Returns {turns held, turns beyond the window, 1 if a compaction request should be sent}.
local key, mark, flag = KEYS[1], KEYS[2], KEYS[3]
local max_turns, max_tokens = tonumber(ARGV[1]), tonumber(ARGV[2])
local ttl, hard_cap, flag_ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])

local mark_score, mark_member = unpack(redis.call('HMGET', mark, 'score', 'member'))
mark_score = tonumber(mark_score)
local function too_late(score, member)
  if mark_score == nil then return false end
  if score ~= mark_score then return score < mark_score end
  return member <= mark_member
end

for i = 6, #ARGV, 2 do
  if not too_late(tonumber(ARGV[i]), ARGV[i + 1]) then
    redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
  end
end

local n = redis.call('ZCARD', key)
if n > hard_cap then
  local dropped = redis.call('ZRANGE', key, n - hard_cap - 1, n - hard_cap - 1, 'WITHSCORES')
  redis.call('HSET', mark, 'score', dropped[2], 'member', dropped[1])
  redis.call('ZREMRANGEBYRANK', key, 0, n - hard_cap - 1)
  n = hard_cap
end

-- The window: at most max_turns newest turns, walking back while the tokens fit (the newest
-- turn always counts).
local members = redis.call('ZREVRANGE', key, 0, max_turns - 1)
local total, window = 0, 0
for i, member in ipairs(members) do
  local tokens = tonumber(cjson.decode(member)['tokens']) or 0
  if i > 1 and total + tokens > max_tokens then
    break
  end
  total = total + tokens
  window = i
end
local due = n - window
local request = 0
if due > 0 and redis.call('SET', flag, '1', 'NX', 'PX', flag_ttl) then
  request = 1
end
if ttl > 0 then
  redis.call('EXPIRE', key, ttl)
  if redis.call('EXISTS', mark) == 1 then
    redis.call('EXPIRE', mark, ttl)
  end
end
return {n, due, request}
