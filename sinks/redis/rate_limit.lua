-- Token buckets (per API key, tenant or client address), taken together or not at all.
-- KEYS[i] a bucket (hash: tokens, at); ARGV[1] now (s, float); ARGV[2i], ARGV[2i+1] the
-- rate (tokens/s) and burst (max tokens) of KEYS[i].
-- Returns {0, "0"} when one token was taken from every bucket, else {i, seconds until
-- KEYS[i] has a token} for the first bucket without one (and nothing is taken from any).
local now = tonumber(ARGV[1])
local tokens = {}
local refused = 0
local wait = 0
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i])
  local burst = tonumber(ARGV[2 * i + 1])
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local t = tonumber(state[1]) or burst
  local at = tonumber(state[2]) or now
  t = math.min(burst, t + math.max(0, now - at) * rate)
  tokens[i] = t
  if t < 1 and refused == 0 then
    refused = i
    wait = (1 - t) / rate
  end
end
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i])
  local burst = tonumber(ARGV[2 * i + 1])
  local t = tokens[i]
  if refused == 0 then
    t = t - 1
  end
  redis.call('HSET', key, 'tokens', tostring(t), 'at', tostring(now))
  redis.call('EXPIRE', key, math.ceil(burst / rate) + 1)
end
return {refused, tostring(wait)}
