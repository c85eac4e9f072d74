-- Claim an event id for one turn: the first claim sets the turn's identity (a hash), its time
-- and when the gateway received it; a later claim with the same identity (a retry) is fine and
-- gets the first claim's times; one with another identity is a conflict.
-- KEYS[1] the claim  ARGV[1] the identity  ARGV[2] ttl s  ARGV[3] the turn's time (µs since epoch)
-- ARGV[4] when this attempt was received (µs since epoch)
-- Returns {1, the time the turn keeps, when it was first received}, or {0, 0, 0} when another
-- turn holds the id. A claim made before claims kept a time or a receipt answers this
-- attempt's for what it lacks.
local value = ARGV[1] .. '|' .. ARGV[3] .. '|' .. ARGV[4]
if redis.call('SET', KEYS[1], value, 'NX', 'EX', tonumber(ARGV[2])) then
  return {1, tonumber(ARGV[3]), tonumber(ARGV[4])}
end
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  return {1, tonumber(ARGV[3]), tonumber(ARGV[4])}
end
local first = string.find(held, '|', 1, true)
if not first or string.sub(held, 1, first - 1) ~= ARGV[1] then
  return {0, 0, 0}
end
local rest = string.sub(held, first + 1)
local second = string.find(rest, '|', 1, true)
if not second then
  return {1, tonumber(rest), tonumber(ARGV[4])}
end
return {1, tonumber(string.sub(rest, 1, second - 1)), tonumber(string.sub(rest, second + 1))}
