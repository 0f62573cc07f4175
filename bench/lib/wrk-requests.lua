-- wrk script: each thread sends the requests of its own file (`<file>.<thread>`), records of a
-- decimal byte length on a line, then that many bytes of raw HTTP request. The files are written
-- before wrk starts, so nothing is parsed or built here: a thread's start costs one open, and the
-- load begins at once for every thread (wrk's clock starts once all threads are set up; work in
-- `init` would let the first thread send uncounted time). A thread that reaches the end of its file
-- starts again (a replayed event then shows as non-2xx). Prints one JSON line of results when done.
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

function init(args)
  file = assert(io.open(args[1] .. "." .. tid, "rb"))
end

function request()
  local length = file:read("*l")
  if not length then
    file:seek("set")
    length = file:read("*l")
  end
  return file:read(tonumber(length))
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format('{"requests":%d,"durationUs":%d,"non2xx":%d,"errors":%d,"p50Us":%d,"p99Us":%d}\n',
    summary.requests, summary.duration, errors.status, errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
