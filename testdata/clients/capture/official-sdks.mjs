// ANTHROPIC_BASE_URL=<recorder> ANTHROPIC_API_KEY=... OPENAI_BASE_URL=<recorder>/v1 OPENAI_API_KEY=...
// node official-sdks.mjs anthropic|openai
// The official TypeScript SDKs with their defaults, their base URLs and keys from the environment:
// a message, a streamed one and a token count (Anthropic); a chat completion, a response and a
// streamed response (OpenAI). Models are their docs' examples.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

if (process.argv[2] === 'anthropic') {
  const client = new Anthropic();
  const params = { model: 'claude-opus-5-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello, Claude' }] };
  console.log((await client.messages.create(params)).content[0].text);
  console.log((await client.messages.stream(params).finalMessage()).content[0].text);
  console.log((await client.messages.countTokens({ model: params.model, messages: params.messages })).input_tokens);
} else {
  const client = new OpenAI();
  const c = await client.chat.completions.create({ model: 'gpt-6-luna', messages: [{ role: 'user', content: 'Say hi' }] });
  console.log(c.choices[0].message.content);
  console.log((await client.responses.create({ model: 'gpt-6-luna', input: 'Say hi' })).output_text);
  let text = '';
  for await (const e of await client.responses.create({ model: 'gpt-6-luna', input: 'Say hi', stream: true })) {
    if (e.type === 'response.output_text.delta') text += e.delta;
  }
  console.log(text);
}
