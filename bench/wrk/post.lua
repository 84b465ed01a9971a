-- One POST body, sent over and over; only one header changes: a fresh unique value per request
-- (a GitHub delivery id, an Idempotency-Key), so every request is a new delivery to the server.
-- The static headers (signature, event, token) come from wrk's -H options: the body is signed once.
--
--   wrk -s bench/wrk/post.lua URL -- BODY_FILE UNIQUE_HEADER RUN_ID [MEAN_DELAY_MS]
--
-- MEAN_DELAY_MS paces each connection: it waits a random 0..2x that long before each request.
-- At the end one JSON line goes to stdout: counts per status, wrk's errors and the latency
-- percentiles in microseconds.

local threads = {}
local thread_count = 0

function setup(thread)
   thread_count = thread_count + 1
   thread:set("thread_id", thread_count)
   table.insert(threads, thread)
end

function init(args)
   local file = assert(io.open(args[1], "rb"))
   wrk.method = "POST"
   wrk.body = file:read("*a")
   file:close()
   unique_header = args[2]
   prefix = args[3] .. "-" .. thread_id .. "-"
   mean_delay_ms = tonumber(args[4] or "0")
   sent = 0
   accepted = 0   -- 202: a new delivery, stored
   repeated = 0   -- 200: answered as a redelivery (for unique ids: a duplicate)
   refused = 0    -- anything else
   math.randomseed(thread_id * 7919 + os.time())
end

function request()
   sent = sent + 1
   wrk.headers[unique_header] = prefix .. sent
   return wrk.format()
end


function delay()
   if mean_delay_ms > 0 then
      return math.random() * 2 * mean_delay_ms
   end
   return 0
end

function response(status, headers, body)
   if status == 202 then
      accepted = accepted + 1
   elseif status == 200 then
      repeated = repeated + 1
   else
      refused = refused + 1
   end
end

function done(summary, latency, requests)
   local totals = {accepted = 0, repeated = 0, refused = 0}
   for _, thread in ipairs(threads) do
      for name, _ in pairs(totals) do
         totals[name] = totals[name] + thread:get(name)
      end
   end
   local errors = summary.errors
   io.write(string.format(
      '{"requests": %d, "duration_us": %d, "accepted": %d, "repeated": %d, "refused": %d, ' ..
      '"connect_errors": %d, "read_errors": %d, "write_errors": %d, "timeouts": %d, ' ..
      '"p50_us": %d, "p99_us": %d, "max_us": %d}\n',
      summary.requests, summary.duration, totals.accepted, totals.repeated, totals.refused,
      errors.connect, errors.read, errors.write, errors.timeout,
      latency:percentile(50), latency:percentile(99), latency.max))
end
