#!/bin/sh
# Adds sensorgate's catalog MCP endpoint to Claude Code (user scope), with the API key from
# SENSORGATE_KEY. Another scope: replace catalog/mcp with sensors/<uuid>/mcp,
# projects/<slug>/mcp or services/<id>/mcp.
set -eu
: "${SENSORGATE_KEY:?set SENSORGATE_KEY to your sensorgate API key}"
claude mcp add --transport http --scope user sensorgate http://127.0.0.1:8080/api/v1/catalog/mcp --header "x-api-key: ${SENSORGATE_KEY}"
