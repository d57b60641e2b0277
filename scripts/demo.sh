#!/usr/bin/env bash
# Runs the example tool publish_report to completion against a running
# server (go run ./cmd/server), over MCP with the Tasks extension:
# tools/call -> task; tasks/get until it asks for approval; tasks/update
# with "accept"; tasks/get until completed. Needs only curl.
#
#   ./scripts/demo.sh [http://127.0.0.1:8080/mcp]
#
# Set OPENWOP_API_KEY when the server has API keys configured.
set -euo pipefail
url=${1:-http://127.0.0.1:8080/mcp}
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}'
auth=()
[ -n "${OPENWOP_API_KEY:-}" ] && auth=(-H "Authorization: Bearer $OPENWOP_API_KEY")

# rpc METHOD NAME PARAMS: one JSON-RPC request with the 2026-07-28 headers.
rpc() {
  curl -sS --fail-with-body "${auth[@]}" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H "Mcp-Method: $1" -H "Mcp-Name: $2" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":$RANDOM,\"method\":\"$1\",\"params\":{$3,$meta}}" "$url"
}
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }

created=$(rpc tools/call publish_report '"name":"publish_report","arguments":{"title":"Quarterly report","topic":"sales"}')
task=$(printf '%s' "$created" | field taskId)
echo "tools/call -> task $task"

status=""
until [ "$status" = input_required ]; do
  sleep 0.5
  got=$(rpc tasks/get "$task" "\"taskId\":\"$task\"")
  status=$(printf '%s' "$got" | field status)
  echo "tasks/get -> $status"
done
interrupt=$(printf '%s' "$got" | sed -n 's/.*"inputRequests":{"\([^"]*\)".*/\1/p')
echo "approving $interrupt"
rpc tasks/update "$task" "\"taskId\":\"$task\",\"inputResponses\":{\"$interrupt\":{\"action\":\"accept\",\"content\":{\"action\":\"accept\"}}}" >/dev/null

until [ "$status" = completed ] || [ "$status" = failed ] || [ "$status" = cancelled ]; do
  sleep 0.5
  got=$(rpc tasks/get "$task" "\"taskId\":\"$task\"")
  status=$(printf '%s' "$got" | field status)
  echo "tasks/get -> $status"
done
printf '%s\n' "$got" | sed -n 's/.*"text":"\([^"]*\)".*/result: \1/p'
[ "$status" = completed ]
