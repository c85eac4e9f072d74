-- Append turns to one session's buffer and trim it to its window, atomically.
-- KEYS[1]  the session's buffer: a sorted set, score = event time in microseconds,
--          member = the turn as canonical JSON (so a redelivered turn is the same member
--          and ZADD is a no-op: appends are idempotent, unlike RPUSH).
-- KEYS[2]  the session's trim mark: a hash {score, member} of the newest turn ever trimmed.
--          A turn at or below it arrives too late to belong in the window (something
--          newer was already trimmed), so it is dropped; this keeps the buffer a
--          contiguous run of the session's newest turns even when turns arrive out of order.
-- ARGV[1]  max turns   ARGV[2] max tokens   ARGV[3] ttl seconds (0 = none)
-- ARGV[4..] pairs of (score, member); each member has a numeric "tokens" field.
-- Returns the number of turns the buffer holds afterwards.
local key, mark = KEYS[1], KEYS[2]
local max_turns = tonumber(ARGV[1])
local max_tokens = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])

local mark_score, mark_member = unpack(redis.call('HMGET', mark, 'score', 'member'))
mark_score = tonumber(mark_score)
local function too_late(score, member)
  if mark_score == nil then return false end
  if score ~= mark_score then return score < mark_score end
  return member <= mark_member
end

for i = 4, #ARGV, 2 do
  local score = tonumber(ARGV[i])
  if not too_late(score, ARGV[i + 1]) then
    redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
  end
end

-- How many of the newest turns stay: at most max_turns, and walking back from the
-- newest, only while the token total fits (the newest turn always stays).
local members = redis.call('ZREVRANGE', key, 0, max_turns - 1)
local total, keep = 0, 0
for i, member in ipairs(members) do
  local tokens = tonumber(cjson.decode(member)['tokens']) or 0
  if i > 1 and total + tokens > max_tokens then
    break
  end
  total = total + tokens
  keep = i
end

local n = redis.call('ZCARD', key)
if keep < n then
  local newest_trimmed = redis.call('ZRANGE', key, n - keep - 1, n - keep - 1, 'WITHSCORES')
  redis.call('HSET', mark, 'score', newest_trimmed[2], 'member', newest_trimmed[1])
  redis.call('ZREMRANGEBYRANK', key, 0, n - keep - 1)
end
if ttl > 0 then
  redis.call('EXPIRE', key, ttl)
  if redis.call('EXISTS', mark) == 1 then
    redis.call('EXPIRE', mark, ttl)
  end
end
return keep
