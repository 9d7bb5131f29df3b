#!/bin/sh
# Claude Code with the URL alone: it finds the gateway's authorization server from the 401,
# registers itself, and opens the browser for the dashboard's sign-in and consent
# (docs/mcp.md "Client set-up"). make run's origin is http://localhost:8080.
claude mcp add --transport http --scope user sensorgate "${SENSORGATE_URL:-http://localhost:8080}/api/v1/catalog/mcp"
