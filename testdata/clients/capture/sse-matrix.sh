#!/usr/bin/env bash
# Which SSE events does each client need? Leaves out one event type at a time (REC_SSE_DROP) and
# checks that the client still exits 0 with the answer "hi". Prints one line per try, with the
# number of POSTs the client made (more than with nothing left out = it retried or fell back).
# Usage: sse-matrix.sh [client...]   clients: claude-code codex ai-sdk-anthropic ai-sdk-chat
#        ai-sdk-responses agents-stream langchain-openai (default: all)
. "$(dirname "$0")/env.sh"
A="message_start content_block_start ping content_block_delta content_block_stop message_delta message_stop"
R="response.created response.in_progress response.output_item.added response.content_part.added
 response.output_text.delta response.output_text.done response.content_part.done response.output_item.done
 response.completed"
C="chat.role chat.content chat.finish chat.usage [DONE]"
echo "openai_base_url = \"$URL/v1\"" > "$W/codex-home/config.toml"
run() {
  case $1 in
    claude-code) "${clean[@]}" ANTHROPIC_BASE_URL=$URL ANTHROPIC_API_KEY=sk-ant-capture claude -p "say hi" ;;
    codex) "${clean[@]}" CODEX_HOME="$W/codex-home" CODEX_API_KEY=sk-capture codex exec "say hi" </dev/null ;;
    ai-sdk-anthropic) "${clean[@]}" REC_URL=$URL node "$here/ai-sdk.mjs" anthropic-stream ;;
    ai-sdk-chat) "${clean[@]}" REC_URL=$URL node "$here/ai-sdk.mjs" openai-chat-stream ;;
    ai-sdk-responses) "${clean[@]}" REC_URL=$URL node "$here/ai-sdk.mjs" openai-responses-stream ;;
    agents-stream) "${clean[@]}" OPENAI_BASE_URL=$URL/v1 OPENAI_API_KEY=sk-capture node "$here/agents.mjs" stream ;;
    langchain-openai) "${clean[@]}" REC_URL=$URL node "$here/langchain.mjs" openai ;;
  esac
}
[ $# = 0 ] && set -- claude-code codex ai-sdk-anthropic ai-sdk-chat ai-sdk-responses agents-stream langchain-openai
for client in "$@"; do
  case $client in claude-code|ai-sdk-anthropic) evs=$A;; ai-sdk-chat|langchain-openai) evs=$C;; *) evs=$R;; esac
  for drop in none $evs; do
    log=$W/tmp/matrix.jsonl; : > "$log"
    REC_OUT=$log REC_SSE_DROP=$([ "$drop" = none ] || echo "$drop") node "$here/recorder.mjs" 2>/dev/null & rec=$!
    sleep 0.4
    out=$(cd "$W/demo" && timeout 60 bash -c "$(declare -p clean); $(declare -f run); here=$here W=$W URL=$URL; run $client" 2>/dev/null)
    rc=$?; kill "$rec"; wait "$rec" 2>/dev/null
    ok=FAIL; [ $rc = 0 ] && [ "$(tail -1 <<<"$out" | tr -d '"{}')" != "" ] && grep -q hi <<<"$(tail -1 <<<"$out")" && ok=ok
    posts=$(grep -c '"method":"POST"' "$log")
    printf '%-17s without %-28s %-4s rc=%-3s model requests=%s\n' "$client" "$drop" "$ok" "$rc" "$posts"
  done
done
