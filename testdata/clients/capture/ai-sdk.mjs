// node ai-sdk.mjs <scenario>   (recorder at $REC_URL, default http://127.0.0.1:8787)
import { generateObject, generateText, streamText } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

const baseURL = `${process.env.REC_URL || 'http://127.0.0.1:8787'}/v1`;
const anthropic = createAnthropic({ baseURL, apiKey: 'sk-ant-test' });
const openai = createOpenAI({ baseURL, apiKey: 'sk-test' });
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const schema = z.object({
  name: z.string().describe('Name of the city'),
  population: z.number().int(),
  tags: z.array(z.string()),
  kind: z.enum(['city', 'town']),
});
const object = (model) => generateObject({ model, schema, prompt: 'Describe Paris as a JSON object.' });
const image = (model) => generateText({
  model,
  messages: [{ role: 'user', content: [
    { type: 'text', text: 'What is in these images?' },
    { type: 'image', image: `data:image/png;base64,${PNG}` },
    { type: 'image', image: new URL('https://example.com/cat.png') },
  ] }],
});
const stream = async (model) => {
  const r = streamText({ model, prompt: 'say hi' });
  return { text: await r.text };
};

const scenarios = {
  'anthropic-object': () => object(anthropic('claude-sonnet-4-5')),
  'openai-chat-object': () => object(openai.chat('gpt-4o-mini')),
  'openai-responses-object': () => object(openai('gpt-4o-mini')),
  'anthropic-image': () => image(anthropic('claude-sonnet-4-5')),
  'openai-image': () => image(openai('gpt-4o-mini')),
  'openai-chat-image': () => image(openai.chat('gpt-4o-mini')),
  'anthropic-stream': () => stream(anthropic('claude-sonnet-4-5')),
  'openai-chat-stream': () => stream(openai.chat('gpt-4o-mini')),
  'openai-responses-stream': () => stream(openai('gpt-4o-mini')),
};
const r = await scenarios[process.argv[2]]();
console.log(JSON.stringify(r.object ?? r.text));
