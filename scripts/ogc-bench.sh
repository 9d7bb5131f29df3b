#!/usr/bin/env bash
# p99 of the OGC API beside the REST calls that answer the same questions (docs/ogc.md
# "Speed"): a 24-hour EDR locations/{id} query vs the sensor's readings page, and a
# 1,000-sensor EDR area query vs the export of the same sensors, on one stack (gateway,
# ocean and weather services as processes, PostgreSQL) in one run. Refuses to measure on a
# busy machine (load average of the last minute at or above 1) unless OGC_BENCH_FORCE=1.
# OGC_BENCH_N (default 200) requests per call, after a tenth more to warm up.
set -euo pipefail
cd "$(dirname "$0")/.."
load=$(cut -d' ' -f1 /proc/loadavg)
if [ "${OGC_BENCH_FORCE:-}" != 1 ] && awk -v l="$load" 'BEGIN{exit !(l >= 1)}'; then
  echo "ogc-bench: load average $load is not below 1; measure on a quiet machine (OGC_BENCH_FORCE=1 to measure anyway)" >&2
  exit 1
fi
echo "load average before: $(cat /proc/loadavg)"
OGC_BENCH=1 scripts/testenv.sh go test -count=1 -run '^TestOGCLatency$' -v -timeout 30m ./gateway/ogc/ | grep -E 'n=|^(ok|FAIL|---)'
echo "load average after: $(cat /proc/loadavg)"
