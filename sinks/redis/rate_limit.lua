-- Token buckets (per API key, tenant or client address), taken together or not at all.
-- KEYS[i] a bucket (hash: tokens, at); ARGV[1] now (s, float); ARGV[2i], ARGV[2i+1] the
-- rate (tokens/s) and burst (max tokens) of KEYS[i]; ARGV[2n+2] (optional) a lease: that many
-- tokens more to take from every bucket for the caller to spend without asking, taken only
-- when every bucket keeps at least half its burst after them (else none).
-- Returns {0, "0", leased} when one token (and the lease) was taken from every bucket, else
-- {i, seconds until KEYS[i] has a token, 0} for the first bucket without one (and nothing is
-- taken from any).
local now = tonumber(ARGV[1])
local lease = tonumber(ARGV[2 * #KEYS + 2]) or 0
local tokens = {}
local ats = {}
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
  -- A request that took its time before the last one came (another process, or a task that
  -- waited for a connection) counts at the bucket's time: refilled up to there, it must not
  -- set the bucket's time back, or the next request would be refilled for that stretch again
  -- (two gateway processes let 15 % more than the rate through so).
  ats[i] = math.max(at, now)
  if t < 1 and refused == 0 then
    refused = i
    wait = (1 - t) / rate
  end
  if t - 1 - lease < burst / 2 then
    lease = 0
  end
end
if refused ~= 0 then
  lease = 0
end
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i])
  local burst = tonumber(ARGV[2 * i + 1])
  local t = tokens[i]
  if refused == 0 then
    t = t - 1 - lease
  end
  redis.call('HSET', key, 'tokens', tostring(t), 'at', tostring(ats[i]))
  redis.call('EXPIRE', key, math.ceil(burst / rate) + 1)
end
return {refused, tostring(wait), lease}
