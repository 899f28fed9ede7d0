wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
-- EXPLAIN=false in wrk's environment: answers without explanations (default: with them)
local explain = os.getenv("EXPLAIN") == "false" and "false" or "true"
local queries = {"red casual dress", "crimson cotton shirt", "premium leather boots", "navy formal jacket", "cheap sneakers", "blue denim jeans", "ivory silk scarf", "black wool coat"}
local i = 0
request = function()
  i = i + 1
  local q = queries[(i % #queries) + 1]
  return wrk.format(nil, "/recommend", nil, '{"query": "' .. q .. '", "k": 10, "explain": ' .. explain .. '}')
end
-- Load test of POST /recommend (k=10, explanations unless EXPLAIN=false) against a running `recsys serve`:
--   apt-get install wrk
--   recsys serve --port 8123 --model ARTIFACTS &
--   wrk -t2 -c16 -d15s --latency -s benchmarks/wrk_recommend.lua http://127.0.0.1:8123
-- or end to end (build or reuse a 100k-item model, serve it, run wrk, stop the server):
--   .venv/bin/python benchmarks/http_bench.py --items 100000 --wrk
-- /recommend without and with explanations against GET /health, 1 and 2 workers:
--   .venv/bin/python benchmarks/http_bench.py --ratios --wrk --workers 1,2
