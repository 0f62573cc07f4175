-- wrk script: sends the requests of a file, one per line: method \t path \t headers ("name: value"
-- pairs joined by \r) \t body. Each thread takes every nth line and hands them to its connections in
-- turn, so each request is sent once; a thread that runs out starts again (a replayed event then
-- shows as non-2xx). Prints one JSON line of results when done.
local threads = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end

function init(args)
  local file, nthreads = args[1], tonumber(args[2])
  reqs, count, idx = {}, 0, 0
  local line_no = 0
  for line in io.lines(file) do
    if line_no % nthreads == tid then
      local method, path, raw_headers, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      local headers = {}
      for name, value in raw_headers:gmatch("([^:\r]+): ([^\r]*)") do headers[name] = value end
      count = count + 1
      reqs[count] = wrk.format(method, path, headers, body)
    end
    line_no = line_no + 1
  end
end

function request()
  idx = idx % count + 1
  return reqs[idx]
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format('{"requests":%d,"durationUs":%d,"non2xx":%d,"errors":%d,"p50Us":%d,"p99Us":%d}\n',
    summary.requests, summary.duration, errors.status, errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
