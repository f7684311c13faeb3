-- wrk script: POST the AdmissionReview in $BENCH_BODY to /validate; with BENCH_CLOSE=1 every
-- request asks for "Connection: close", so each one pays a new TCP + TLS handshake.
-- At the end it prints one JSON line with the figures the runner reads.
local file = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
if os.getenv("BENCH_CLOSE") == "1" then
  wrk.headers["Connection"] = "close"
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
