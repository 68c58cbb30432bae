-- stats.lua -- wraps the shared load script (env POST_LUA: the POST with body
-- file env BODY and env ACCEPT) and prints one machine-readable summary line,
-- so bench/http.py reads exact counts and microsecond percentiles.
dofile(os.getenv("POST_LUA"))
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'TVSTATS {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,' ..
    '"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,' ..
    '"p99":%d,"p999":%d,"mean":%.1f,"max":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read,
    e.write, e.status, e.timeout, latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.mean, latency.max))
end
