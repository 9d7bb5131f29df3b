#!/usr/bin/env bash
# The README's API tour ("A short API tour"), every call checked: a curl that gets an HTTP
# error fails the script; a stream (-N) is followed for 3 s. Files the tour writes
# (readings.csv, week.ndjson, january.csv) go to OUT (default: a new temporary directory).
#
#   make run                      # in another terminal
#   examples/curl-tour.sh         # GW=http://host:port/api/v1 for another gateway
#
# Needs curl and jq. deploy/examplestest runs it against a real stack and checks that the
# README's block below is here unchanged.
set -euo pipefail
OUT=${OUT:-$(mktemp -d)}
cd "$OUT"

curl() {
  local limit=30 rc=0
  [[ " $* " == *" -N "* ]] && limit=3
  echo "+ curl $*" >&2
  command curl -sS --fail-with-body --max-time "$limit" "$@" || rc=$?
  echo >&2
  # A stream never ends by itself: its time running out is the expected way out.
  if [ "$rc" = 28 ] && [ "$limit" = 3 ]; then rc=0; fi
  return "$rc"
}

# --- the README's block, unchanged ---
KEY='x-api-key: sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a'
GW=${GW:-http://127.0.0.1:8080/api/v1}

# Sensors: search, filters, map filters, paging, reduced views
curl -H "$KEY" "$GW/sensors?limit=5"
curl -H "$KEY" "$GW/sensors?sensor_type=buoy&data_types=wave_height_m,water_temperature_c"
curl -H "$KEY" "$GW/sensors?min_lat=25&min_lon=-85&max_lat=45&max_lon=-65&minimal=true"
curl -H "$KEY" "$GW/sensors?lat=40.7&lon=-74.0&radius_km=100&sort=distance&fields=id,name,distance_km"
curl -H "$KEY" "$GW/sensors/types"; curl -H "$KEY" "$GW/sensors/statuses"
curl -H "$KEY" "$GW/sensors/registry?provider=noaa-ndbc"

# One sensor, by UUID or by the provider's id, and its readings
ID=$(curl -s -H "$KEY" "$GW/sensors?sensor_type=buoy&limit=1" | jq -r '.sensors[0].id')
curl -H "$KEY" "$GW/sensors/$ID"
curl -H "$KEY" "$GW/sensors/$ID/readings/latest"
curl -H "$KEY" "$GW/sensors/$ID/readings?days=1&parameter=wave_height_m,wind_speed_ms&limit=50"
curl -H "$KEY" "$GW/sensors/$ID/readings/latest?data_format=raw"   # the provider's own payload

# Formats: csv (long form, one row per measurement), ndjson, geojson; the query wins over Accept
curl -H "$KEY" "$GW/sensors/$ID/readings?days=1&format=csv" -o readings.csv
curl -H "$KEY" -H 'Accept: application/x-ndjson' "$GW/sensors/$ID/readings?days=1"
curl -H "$KEY" "$GW/sensors?sensor_type=buoy&format=geojson"

# Aggregates on the local clock of a zone: DST days are 23/25 h, empty buckets kept, coverage,
# wind direction as a circular mean
curl -H "$KEY" "$GW/sensors/$ID/readings/aggregate?interval=1d&tz=America/New_York&days=30&stats=mean,max,count"
curl -H "$KEY" "$GW/sensors/$ID/readings/aggregate?interval=1h&days=2&parameter=wind_direction_deg&format=csv"

# Bulk export, streamed (at most 366 days and 1000 sensors; one request of the budget per
# started 10,000 rows); gzip when asked for
curl -H "$KEY" --compressed "$GW/readings/export?service=ocean&days=7&format=ndjson" -o week.ndjson
curl -H "$KEY" "$GW/readings/export?sensor_ids=$ID&since=2026-01-01&until=2026-02-01" -o january.csv

# Revision history: NDBC's quality-controlled files supersede realtime values
curl -H "$KEY" "$GW/sensors/$ID/readings?days=30&revisions=true"

# Live data (docs/live.md): the newest reading of every sensor of an area, stale or not by
# the one rule (2x the reporting interval, or max_age), and Server-Sent Event streams
curl -H "$KEY" "$GW/readings/latest?min_lat=25&min_lon=-85&max_lat=45&max_lon=-65&max_age=PT30M"
curl -H "$KEY" "$GW/readings/latest?sensor_ids=$ID,TPLM2&parameter=air_temperature_c"
curl -N -H "$KEY" "$GW/readings/stream?service=weather"          # new readings as they are stored
curl -N -H "$KEY" "$GW/sensors/$ID/readings/stream"      # resume: -H "Last-Event-ID: <the last id seen>"

# Services, their live health, projects
curl -H "$KEY" "$GW/services"
curl -H "$KEY" "$GW/services/ocean/health"
curl -H "$KEY" "$GW/projects?domain=ocean"

# MCP (JSON-RPC 2.0): the catalog endpoint is the preferred one for agents
curl -H "$KEY" -H 'Content-Type: application/json' "$GW/catalog/mcp" \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
curl -H "$KEY" -H 'Content-Type: application/json' "$GW/sensors/$ID/mcp" \
  -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ocean.latest_observation","arguments":{}}}'
# Alert rules as MCP tools (create_alert_rule, list_alert_rules, ...): their own endpoint
curl -H "$KEY" -H 'Content-Type: application/json' "$GW/alerts/mcp" \
  -d '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_alert_rules","arguments":{}}}'
# --- end of the README's block ---

echo "tour: every call answered; files in $OUT" >&2
