-- Claim an event id for one turn: the first claim sets the turn's identity (a hash), a later
-- claim with the same identity (a retry) is fine, one with another identity is a conflict.
-- KEYS[1] the claim  ARGV[1] the identity  ARGV[2] ttl s
-- Returns 1 when the id is this turn's, 0 when another turn holds it.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', tonumber(ARGV[2])) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
