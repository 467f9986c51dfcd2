// Loopback recording upstream: logs each request as one JSON line to $REC_OUT
// and answers with minimal valid Anthropic / OpenAI (chat, responses) replies.
// Env: REC_PORT (default 8787), REC_OUT (default ./exchanges.jsonl),
//      REC_CALL_TOOL (a function tool name to call once before answering in text),
//      REC_TOOL_INPUT (JSON arguments for that call; default: a sample of its schema).
import http from 'node:http';
import fs from 'node:fs';
import zlib from 'node:zlib';

const PORT = Number(process.env.REC_PORT || 8787);
const OUT = process.env.REC_OUT || 'exchanges.jsonl';
const CALL_TOOL = process.env.REC_CALL_TOOL || '';
const TOOL_INPUT = process.env.REC_TOOL_INPUT ? JSON.parse(process.env.REC_TOOL_INPUT) : null; // args for REC_CALL_TOOL
const SECRET_HEADER = /key|authorization|token|secret|cookie/i;
let n = 0;
const id = (p) => `${p}_rec${String(++n).padStart(6, '0')}`;
const now = () => Math.floor(Date.now() / 1000);

// A minimal value that satisfies a JSON schema (enough for structured output).
function sample(s, root = s, depth = 0) {
  if (!s || depth > 12) return null;
  if (s.$ref) {
    const path = s.$ref.replace(/^#\//, '').split('/');
    return sample(path.reduce((o, k) => o?.[k], root), root, depth + 1);
  }
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  for (const k of ['anyOf', 'oneOf', 'allOf']) {
    if (s[k]) return sample(s[k].find((x) => x.type !== 'null') || s[k][0], root, depth + 1);
  }
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  switch (t || (s.properties ? 'object' : s.items ? 'array' : 'string')) {
    case 'object': {
      const o = {};
      for (const [k, v] of Object.entries(s.properties || {})) {
        if (!Array.isArray(s.required) || s.required.includes(k)) o[k] = sample(v, root, depth + 1);
      }
      return o;
    }
    case 'array': return [sample(s.items || {}, root, depth + 1)];
    case 'number': case 'integer': return Math.min(Math.max(1, s.minimum ?? 1), s.maximum ?? 1);
    case 'boolean': return true;
    case 'null': return null;
    default: return s.format === 'uri' ? 'https://example.com' : 'hi';
  }
}

// REC_SSE_DROP: comma-separated event types to leave out (to find which ones a client needs);
// chat chunks are named chat.role, chat.content, chat.finish, chat.usage and [DONE].
const DROP = new Set((process.env.REC_SSE_DROP || '').split(',').filter(Boolean));
function sse(res, events, { named = true, done = false } = {}) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [name, e] of events.map((e) => (Array.isArray(e) ? e : [e.type, e]))) {
    if (!DROP.has(name)) res.write((named ? `event: ${name}\n` : '') + `data: ${JSON.stringify(e)}\n\n`);
  }
  if (done && !DROP.has('[DONE]')) res.write('data: [DONE]\n\n');
  res.end();
}
const json = (res, obj, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
};

// ---------- Anthropic /v1/messages ----------
function anthropic(body, res) {
  const tools = body.tools || [];
  const forced = body.tool_choice?.type === 'tool' ? tools.find((t) => t.name === body.tool_choice.name) : null;
  const answered = JSON.stringify(body.messages || []).includes('"tool_result"');
  const callable = !forced && CALL_TOOL && !answered ? tools.find((t) => t.name === CALL_TOOL) : null;
  const fmt = body.output_config?.format || body.output_format;
  let block;
  if (forced || callable) {
    const t = forced || callable;
    block = { type: 'tool_use', id: id('toolu'), name: t.name, input: callable && TOOL_INPUT ? TOOL_INPUT : sample(t.input_schema) };
  } else {
    block = { type: 'text', text: fmt?.schema ? JSON.stringify(sample(fmt.schema)) : 'hi' };
  }
  const stop = block.type === 'tool_use' ? 'tool_use' : 'end_turn';
  const usage = { input_tokens: 12, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const msg = { id: id('msg'), type: 'message', role: 'assistant', model: body.model, content: [block],
    stop_reason: stop, stop_sequence: null, usage };
  if (!body.stream) return json(res, msg), 'json';
  const start = block.type === 'text' ? { type: 'text', text: '' } : { ...block, input: {} };
  const delta = block.type === 'text' ? { type: 'text_delta', text: block.text }
    : { type: 'input_json_delta', partial_json: JSON.stringify(block.input) };
  sse(res, [
    { type: 'message_start', message: { ...msg, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: start },
    { type: 'ping' },
    { type: 'content_block_delta', index: 0, delta },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } },
    { type: 'message_stop' },
  ]);
  return 'sse';
}

// ---------- OpenAI /v1/chat/completions ----------
function chat(body, res) {
  const tools = (body.tools || []).filter((t) => t.type === 'function');
  const forcedName = body.tool_choice?.function?.name;
  const hasResult = (body.messages || []).some((m) => m.role === 'tool');
  const t = tools.find((x) => x.function.name === forcedName) ||
    (CALL_TOOL && !hasResult && tools.find((x) => x.function.name === CALL_TOOL));
  const rf = body.response_format;
  const message = { role: 'assistant', content: null, refusal: null };
  if (t) {
    message.tool_calls = [{ id: id('call'), type: 'function',
      function: { name: t.function.name, arguments: JSON.stringify(
        t.function.name === CALL_TOOL && TOOL_INPUT ? TOOL_INPUT : sample(t.function.parameters)) } }];
  } else {
    message.content = rf?.type === 'json_schema' ? JSON.stringify(sample(rf.json_schema.schema))
      : rf?.type === 'json_object' ? '{"answer":"hi"}' : 'hi';
  }
  const finish = t ? 'tool_calls' : 'stop';
  const usage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
  const base = { id: id('chatcmpl'), created: now(), model: body.model, system_fingerprint: 'fp_rec' };
  if (!body.stream) {
    return json(res, { ...base, object: 'chat.completion',
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage }), 'json';
  }
  const chunk = (delta, finish_reason = null) => ({ ...base, object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, logprobs: null, finish_reason }] });
  const ev = [['chat.role', chunk({ role: 'assistant', content: t ? null : '', refusal: null })]];
  if (t) ev.push(['chat.content', chunk({ tool_calls: message.tool_calls.map((c, index) => ({ index, ...c })) })]);
  else ev.push(['chat.content', chunk({ content: message.content })]);
  ev.push(['chat.finish', chunk({}, finish)]);
  if (body.stream_options?.include_usage) {
    ev.push(['chat.usage', { ...base, object: 'chat.completion.chunk', choices: [], usage }]);
  }
  sse(res, ev, { named: false, done: true });
  return 'sse';
}

// ---------- OpenAI /v1/responses ----------
function responses(body, res) {
  const tools = body.tools || [];
  const input = Array.isArray(body.input) ? body.input : [];
  const forcedName = body.tool_choice?.name;
  const hasResult = input.some((i) => i.type === 'function_call_output');
  const t = tools.find((x) => x.type === 'function' && x.name === forcedName) ||
    (CALL_TOOL && !hasResult && tools.find((x) => x.type === 'function' && x.name === CALL_TOOL));
  const fmt = body.text?.format;
  const text = fmt?.type === 'json_schema' ? JSON.stringify(sample(fmt.schema))
    : fmt?.type === 'json_object' ? '{"answer":"hi"}' : 'hi';
  const item = t
    ? { id: id('fc'), type: 'function_call', status: 'completed', call_id: id('call'), name: t.name,
      arguments: JSON.stringify(t.name === CALL_TOOL && TOOL_INPUT ? TOOL_INPUT : sample(t.parameters)) }
    : { id: id('msg'), type: 'message', status: 'completed', role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] };
  const usage = { input_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 17 };
  const resp = { id: id('resp'), object: 'response', created_at: now(), status: 'completed', error: null,
    incomplete_details: null, instructions: body.instructions ?? null, max_output_tokens: body.max_output_tokens ?? null,
    model: body.model, output: [item], parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null, reasoning: body.reasoning ?? null,
    store: body.store ?? true, temperature: body.temperature ?? 1, text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto', tools, top_p: body.top_p ?? 1, truncation: 'disabled',
    usage, metadata: body.metadata ?? {} };
  if (!body.stream) return json(res, resp), 'json';
  let seq = 0;
  const e = (type, o) => ({ type, sequence_number: seq++, ...o });
  const pending = { ...resp, status: 'in_progress', output: [], usage: null };
  const ev = [e('response.created', { response: pending }), e('response.in_progress', { response: pending })];
  const at = { item_id: item.id, output_index: 0 };
  if (t) {
    ev.push(e('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', arguments: '' } }),
      e('response.function_call_arguments.delta', { ...at, delta: item.arguments }),
      e('response.function_call_arguments.done', { ...at, arguments: item.arguments }));
  } else {
    const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    ev.push(e('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
      e('response.content_part.added', { ...at, content_index: 0, part }),
      e('response.output_text.delta', { ...at, content_index: 0, delta: text, logprobs: [] }),
      e('response.output_text.done', { ...at, content_index: 0, text, logprobs: [] }),
      e('response.content_part.done', { ...at, content_index: 0, part: { ...part, text } }));
  }
  ev.push(e('response.output_item.done', { output_index: 0, item }), e('response.completed', { response: resp }));
  sse(res, ev);
  return 'sse';
}

const MODELS = ['claude-sonnet-4-5', 'claude-haiku-4-5', 'gpt-5', 'gpt-5-codex', 'gpt-4o-mini'];
function route(method, path, body, res) {
  const p = path.split('?')[0].replace(/^\/v1(?=\/)/, '');
  if (method === 'POST' && p === '/messages/count_tokens') return json(res, { input_tokens: 42 }), 'json';
  if (method === 'POST' && p === '/messages') return anthropic(body, res);
  if (method === 'POST' && p === '/chat/completions') return chat(body, res);
  if (method === 'POST' && p === '/responses') return responses(body, res);
  if (method === 'GET' && p === '/models') {
    return json(res, { object: 'list', data: MODELS.map((m) => ({ id: m, object: 'model', created: 0,
      owned_by: 'recorder', type: 'model', display_name: m, created_at: '2025-01-01T00:00:00Z' })),
    has_more: false, first_id: MODELS[0], last_id: MODELS.at(-1) }), 'json';
  }
  json(res, { error: { type: 'not_found_error', message: `recorder: no route for ${method} ${p}` } }, 404);
  return 'json';
}

function decode(buf, enc) {
  if (enc === 'gzip') return zlib.gunzipSync(buf);
  if (enc === 'br') return zlib.brotliDecompressSync(buf);
  if (enc === 'deflate') return zlib.inflateSync(buf);
  if (enc === 'zstd' && zlib.zstdDecompressSync) return zlib.zstdDecompressSync(buf);
  return buf;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = SECRET_HEADER.test(k) ? 'REDACTED' : v;
    const raw = decode(Buffer.concat(chunks), req.headers['content-encoding']).toString('utf8');
    let body = raw === '' ? null : raw;
    try { body = JSON.parse(raw); } catch {}
    let kind;
    try { kind = route(req.method, req.url, body || {}, res); } catch (err) {
      json(res, { error: { message: String(err) } }, 500); kind = 'json';
    }
    fs.appendFileSync(OUT, JSON.stringify({ method: req.method, path: req.url, headers, body,
      response_kind: kind, status: res.statusCode }) + '\n');
  });
});
server.on('upgrade', (req, socket) => { // e.g. a websocket attempt: log it, refuse it
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k] = SECRET_HEADER.test(k) ? 'REDACTED' : v;
  fs.appendFileSync(OUT, JSON.stringify({ method: req.method, path: req.url, headers, body: null,
    response_kind: 'upgrade-refused', status: 426 }) + '\n');
  socket.end('HTTP/1.1 426 Upgrade Required\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
});
server.listen(PORT, '127.0.0.1', () => console.error(`recorder on 127.0.0.1:${PORT} -> ${OUT}`));
