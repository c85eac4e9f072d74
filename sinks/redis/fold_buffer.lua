-- Fold turns into the rolling summary, then trim them: the second half of summarize-before-
-- trim. Atomic with respect to appends: only the named members are removed, so turns that
-- arrived meanwhile stay.
-- KEYS[1] buffer  KEYS[2] trim mark  KEYS[3] summary (hash)  KEYS[4] request flag
-- ARGV[1] summary text  ARGV[2] summariser  ARGV[3] input tokens  ARGV[4] output tokens
-- ARGV[5] ttl s  ARGV[6] now (ISO 8601)  ARGV[7] the private turns' agents (JSON list; who may
-- read the summary)  ARGV[8..] the members that were summarised.
-- Returns the number of turns folded, or -1 when a member is gone (another fold won).
local key, mark, summary, flag = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local newest_score, newest_member = nil, nil
for i = 8, #ARGV do
  local score = redis.call('ZSCORE', key, ARGV[i])
  if not score then
    return -1
  end
  score = tonumber(score)
  if newest_score == nil or score > newest_score or (score == newest_score and ARGV[i] > newest_member) then
    newest_score, newest_member = score, ARGV[i]
  end
end
local folded = #ARGV - 7
if folded > 0 then
  for i = 8, #ARGV do
    redis.call('ZREM', key, ARGV[i])
  end
  redis.call('HSET', mark, 'score', string.format('%.0f', newest_score), 'member', newest_member)
end
redis.call('HSET', summary, 'text', ARGV[1], 'summarizer', ARGV[2], 'updated_at', ARGV[6],
  'through', string.format('%.0f', newest_score or 0), 'agents', ARGV[7])
redis.call('HINCRBY', summary, 'turns', folded)
redis.call('HINCRBY', summary, 'calls', 1)
redis.call('HINCRBY', summary, 'input_tokens', tonumber(ARGV[3]))
redis.call('HINCRBY', summary, 'output_tokens', tonumber(ARGV[4]))
redis.call('DEL', flag)
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  redis.call('EXPIRE', summary, ttl)
  redis.call('EXPIRE', mark, ttl)
end
return folded
