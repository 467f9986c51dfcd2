#!/usr/bin/env bash
# Re-captures the files of testdata/clients/ made with the versions package.json pins. Run from
# anywhere after `npm ci` in this folder (or with the packages installed in a parent folder).
# Writes to $OUT (default: this folder's parent). The claude-code-2.1.332-* files were recorded
# the same way with that Claude Code installed instead, by the commands their README rows give.
# Each client runs in a clean env with a throwaway HOME, pointed at the loopback recorder.
set -u
. "$(dirname "$0")/env.sh"
rec() { # <file> <client@version> <how> <command...>
  local f=$1 c=$2 h=$3; shift 3
  (cd "$W/demo" && "$here/record.sh" "$OUT/$f" "$c" "$h" -- "$@")
}

# Claude Code: ANTHROPIC_BASE_URL + ANTHROPIC_API_KEY
cc=$(ver @anthropic-ai/claude-code)
ccenv=(ANTHROPIC_BASE_URL=$URL ANTHROPIC_API_KEY=sk-ant-capture)
rec claude-code-turn.json "$cc" 'ANTHROPIC_BASE_URL=<recorder> ANTHROPIC_API_KEY=... claude -p "say hi"' \
  "${clean[@]}" "${ccenv[@]}" claude -p "say hi"
rec claude-code-turn-sonnet-4-5.json "$cc" 'ANTHROPIC_BASE_URL=<recorder> ANTHROPIC_API_KEY=... claude -p "say hi" --model claude-sonnet-4-5' \
  "${clean[@]}" "${ccenv[@]}" claude -p "say hi" --model claude-sonnet-4-5
rec claude-code-turn-prefixed-model.json "$cc" 'ANTHROPIC_BASE_URL=<recorder> ANTHROPIC_API_KEY=... claude -p "say hi" --model anthropic:claude-sonnet-4-5' \
  "${clean[@]}" "${ccenv[@]}" claude -p "say hi" --model anthropic:claude-sonnet-4-5
REC_CALL_TOOL=Read REC_TOOL_INPUT="{\"file_path\":\"$W/demo/notes.txt\"}" \
rec claude-code-tool-turn.json "$cc" 'ANTHROPIC_BASE_URL=<recorder> ANTHROPIC_API_KEY=... claude -p "read notes.txt" (recorder answers the first main-loop request with a Read tool_use)' \
  "${clean[@]}" "${ccenv[@]}" claude -p "read notes.txt"
REC_SSE_DROP=message_start \
rec claude-code-stream-fallback.json "$cc" 'ANTHROPIC_BASE_URL=<recorder> ANTHROPIC_API_KEY=... claude -p "say hi" (recorder leaves message_start out of its SSE answer: Claude Code retries without streaming)' \
  "${clean[@]}" "${ccenv[@]}" claude -p "say hi"

# Codex CLI: config.toml in a throwaway CODEX_HOME (codex 0.171 reads neither OPENAI_BASE_URL nor, for
# its built-in provider, OPENAI_API_KEY: CODEX_API_KEY is the key for `codex exec`)
cx=$(ver @openai/codex)
cxenv=(CODEX_HOME=$W/codex-home CODEX_API_KEY=sk-capture OPENAI_API_KEY=sk-capture)
echo "openai_base_url = \"$URL/v1\"" > "$W/codex-home/config.toml"
rec codex-exec.json "$cx" "CODEX_HOME with config.toml: openai_base_url = \"<recorder>/v1\"; CODEX_API_KEY=... codex exec \"say hi\" </dev/null" \
  "${clean[@]}" "${cxenv[@]}" codex exec "say hi" </dev/null
printf 'model_provider = "recorder"\n\n[model_providers.recorder]\nname = "Recorder"\nbase_url = "%s/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n' "$URL" > "$W/codex-home/config.toml"
rec codex-exec-custom-provider.json "$cx" "CODEX_HOME with config.toml: model_provider = \"recorder\", [model_providers.recorder] base_url = \"<recorder>/v1\", env_key = \"OPENAI_API_KEY\", wire_api = \"responses\"; OPENAI_API_KEY=... codex exec \"say hi\" </dev/null" \
  "${clean[@]}" "${cxenv[@]}" codex exec "say hi" </dev/null
REC_CALL_TOOL=exec_command REC_TOOL_INPUT='{"cmd":"cat notes.txt"}' \
rec codex-exec-tool-turn.json "$cx" "same custom provider; codex exec -m gpt-5-codex \"show notes.txt\" </dev/null (recorder answers the first request with an exec_command function_call)" \
  "${clean[@]}" "${cxenv[@]}" codex exec -m gpt-5-codex "show notes.txt" </dev/null

# Vercel AI SDK, LangChain, OpenAI Agents SDK: small drivers in this folder
ai="$(ver ai) + $(ver @ai-sdk/anthropic) + $(ver @ai-sdk/openai) + $(ver zod)"
for s in anthropic-generate-object:anthropic-object openai-chat-generate-object:openai-chat-object \
  openai-responses-generate-object:openai-responses-object anthropic-image:anthropic-image \
  openai-image:openai-image openai-chat-image:openai-chat-image anthropic-stream-text:anthropic-stream \
  openai-chat-stream-text:openai-chat-stream openai-responses-stream-text:openai-responses-stream; do
  rec "ai-sdk-${s%%:*}.json" "$ai" "node capture/ai-sdk.mjs ${s#*:}" "${clean[@]}" REC_URL=$URL node "$here/ai-sdk.mjs" "${s#*:}"
done
rec langchain-anthropic-structured.json "$(ver @langchain/anthropic) + $(ver @langchain/core)" \
  "node capture/langchain.mjs anthropic (withStructuredOutput(zod).invoke, then .stream)" \
  "${clean[@]}" REC_URL=$URL node "$here/langchain.mjs" anthropic
rec langchain-openai-structured.json "$(ver @langchain/openai) + $(ver @langchain/core)" \
  "node capture/langchain.mjs openai (withStructuredOutput(zod).invoke, then .stream)" \
  "${clean[@]}" REC_URL=$URL node "$here/langchain.mjs" openai
ag=$(ver @openai/agents)
export REC_CALL_TOOL=get_weather REC_TOOL_INPUT='{"city":"Paris"}'
rec agents-sdk-run.json "$ag" "OPENAI_BASE_URL=<recorder>/v1 OPENAI_API_KEY=... node capture/agents.mjs (run(agent, input); recorder calls get_weather once)" \
  "${clean[@]}" OPENAI_BASE_URL=$URL/v1 OPENAI_API_KEY=sk-capture node "$here/agents.mjs"
rec agents-sdk-run-stream.json "$ag" "OPENAI_BASE_URL=<recorder>/v1 OPENAI_API_KEY=... node capture/agents.mjs stream (run(agent, input, {stream: true}); recorder calls get_weather once)" \
  "${clean[@]}" OPENAI_BASE_URL=$URL/v1 OPENAI_API_KEY=sk-capture node "$here/agents.mjs" stream
unset REC_CALL_TOOL REC_TOOL_INPUT
# The official TypeScript SDKs: base URL and key from the environment, nothing else set.
rec anthropic-sdk-ts.json "$(ver @anthropic-ai/sdk)" "ANTHROPIC_BASE_URL=<recorder> ANTHROPIC_API_KEY=... node capture/official-sdks.mjs anthropic" \
  "${clean[@]}" ANTHROPIC_BASE_URL=$URL ANTHROPIC_API_KEY=sk-ant-capture node "$here/official-sdks.mjs" anthropic
rec openai-sdk-ts.json "$(ver openai)" "OPENAI_BASE_URL=<recorder>/v1 OPENAI_API_KEY=... node capture/official-sdks.mjs openai" \
  "${clean[@]}" OPENAI_BASE_URL=$URL/v1 OPENAI_API_KEY=sk-capture node "$here/official-sdks.mjs" openai
