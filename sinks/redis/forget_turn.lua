-- Forget one turn of a session's buffer (DELETE /v1/memories/{id}), atomically with appends and
-- folds of the same buffer.
-- KEYS[1] the buffer  KEYS[2] its rolling summary (hash)
-- ARGV[1] the turn's event id  ARGV[2] its event time in microseconds (the buffer's score)
-- Its entry is removed wherever it is (the window, or waiting to be folded). A summary that has
-- folded in turns up to (or past) the turn's time may hold it in its text, which cannot be
-- edited: the summary is dropped (the trim mark stays, so no folded turn comes back; the next
-- fold starts a new summary; the session's episodes still hold the rest).
-- Returns {entries removed, 1 if the rolling summary was dropped}.
local removed = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local ok, turn = pcall(cjson.decode, member)
  if ok and type(turn) == 'table' and turn['event_id'] == ARGV[1] then
    removed = removed + redis.call('ZREM', KEYS[1], member)
  end
end
local dropped = 0
local through = tonumber(redis.call('HGET', KEYS[2], 'through'))
if through ~= nil and tonumber(ARGV[2]) <= through then
  redis.call('DEL', KEYS[2])
  dropped = 1
end
return {removed, dropped}
