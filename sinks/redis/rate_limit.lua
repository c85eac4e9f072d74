-- A token bucket (per API key, tenant or client address). KEYS[1] the bucket (hash: tokens, at).
-- ARGV[1] rate (tokens/s)  ARGV[2] burst (max tokens)  ARGV[3] now (s, float)
-- Returns {allowed (1|0), seconds until one token is available (string)}.
local key = KEYS[1]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', key, 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', key, 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', key, math.ceil(burst / rate) + 1)
return {allowed, tostring(wait)}
