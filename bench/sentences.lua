-- sentences.lua -- wrk's script for `make bench-sentences`: POST
-- /v1/embeddings with the bodies BODIES/body-0.json ... body-(N-1).json
-- (env BODIES, N) in turn, each connection from its own offset; prints
-- one machine-readable line (requests, non-2xx, duration, latency
-- percentiles in microseconds) for bench/sentences.sh.
local bodies = {}
local next_body = 0

function init(args)
  local dir, n = os.getenv("BODIES"), tonumber(os.getenv("N"))
  for i = 0, n - 1 do
    local f = assert(io.open(dir .. "/body-" .. i .. ".json", "rb"))
    bodies[i + 1] = f:read("*a")
    f:close()
  end
  wrk.method = "POST"
  wrk.path = "/v1/embeddings"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  next_body = next_body % #bodies + 1
  return wrk.format(nil, nil, nil, bodies[next_body])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'SENTSTATS {"requests":%d,"duration_us":%d,"non2xx":%d,' ..
    '"errors":%d,"p50":%d,"p99":%d}\n',
    summary.requests, summary.duration, e.status,
    e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
