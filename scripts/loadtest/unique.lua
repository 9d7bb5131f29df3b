-- wrk script: every request gets a distinct since= value, so the gateway can answer none
-- of them from its cache (each is a real upstream call) while a static backend, which
-- ignores the query, sends the same body. Threads take disjoint ranges (offset is set per
-- thread by setup and read as a global in the thread).
counter = 0
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("offset", threads * 100000000)
end

function request()
  counter = counter + 1
  local since = os.date("!%Y-%m-%dT%H:%M:%SZ", 946684800 + (offset or 0) + counter)
  local sep = "?"
  if string.find(wrk.path, "?", 1, true) then sep = "&" end
  return wrk.format(nil, wrk.path .. sep .. "since=" .. since)
end
