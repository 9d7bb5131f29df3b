-- wrk script: every request gets a distinct since= value, so the gateway can answer none
-- of them from its cache (each is a real upstream call) while a static backend, which
-- ignores the query, sends the same body. Threads take disjoint ranges (offset is set per
-- thread by setup and read as a global in the thread), from a base the load script draws
-- for each run (UNIQUE_BASE), so that no run repeats another's and finds it cached.
counter = 0
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("offset", (tonumber(os.getenv("UNIQUE_BASE")) or 0) + threads * 100000000)
end

function request()
  counter = counter + 1
  local since = os.date("!%Y-%m-%dT%H:%M:%SZ", 946684800 + (offset or 0) + counter)
  local sep = "?"
  if string.find(wrk.path, "?", 1, true) then sep = "&" end
  return wrk.format(nil, wrk.path .. sep .. "since=" .. since)
end
