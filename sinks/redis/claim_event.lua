-- Claim an event id for one turn: the first claim sets the turn's identity (a hash) and its
-- time, a later claim with the same identity (a retry) is fine and gets the first claim's time,
-- one with another identity is a conflict.
-- KEYS[1] the claim  ARGV[1] the identity  ARGV[2] ttl s  ARGV[3] the turn's time (µs since epoch)
-- Returns {1, the time the turn keeps (the first claim's)}, or {0, 0} when another turn holds the id.
local value = ARGV[1] .. '|' .. ARGV[3]
if redis.call('SET', KEYS[1], value, 'NX', 'EX', tonumber(ARGV[2])) then
  return {1, tonumber(ARGV[3])}
end
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then  -- a claim made before claims kept a time
  return {1, tonumber(ARGV[3])}
end
local sep = string.find(held, '|', 1, true)
if sep and string.sub(held, 1, sep - 1) == ARGV[1] then
  return {1, tonumber(string.sub(held, sep + 1))}
end
return {0, 0}
