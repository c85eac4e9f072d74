-- Append turns to one session's buffer and trim it to its window, atomically.
-- KEYS[1]  the session's buffer: a sorted set, score = event time in microseconds,
--          member = the turn as canonical JSON (so a redelivered turn is the same member
--          and ZADD is a no-op: appends are idempotent, unlike RPUSH).
-- ARGV[1]  max turns   ARGV[2] max tokens   ARGV[3] ttl seconds (0 = none)
-- ARGV[4..] pairs of (score, member); each member has a numeric "tokens" field.
-- Returns the number of turns the buffer holds afterwards.
local key = KEYS[1]
local max_turns = tonumber(ARGV[1])
local max_tokens = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
for i = 4, #ARGV, 2 do
  redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
end
local n = redis.call('ZCARD', key)
if n > max_turns then
  redis.call('ZREMRANGEBYRANK', key, 0, n - max_turns - 1)
end
-- Token bound: walk from the newest turn back; the newest turn always stays.
local members = redis.call('ZREVRANGE', key, 0, -1)
local total = 0
local keep = 0
for i, member in ipairs(members) do
  local tokens = tonumber(cjson.decode(member)['tokens']) or 0
  if i > 1 and total + tokens > max_tokens then
    break
  end
  total = total + tokens
  keep = i
end
if keep < #members then
  redis.call('ZREMRANGEBYRANK', key, 0, #members - keep - 1)
end
if ttl > 0 then
  redis.call('EXPIRE', key, ttl)
end
return keep
