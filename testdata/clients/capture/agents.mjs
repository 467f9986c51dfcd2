// OPENAI_BASE_URL=http://127.0.0.1:8787/v1 OPENAI_API_KEY=sk-test node agents.mjs [stream]
// (run the recorder with REC_CALL_TOOL=get_weather so the model calls the tool once)
import { Agent, run, tool } from '@openai/agents';
import { z } from 'zod';

const getWeather = tool({
  name: 'get_weather',
  description: 'Get the current weather for a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `It is sunny in ${city}.`,
});
const agent = new Agent({
  name: 'Weather agent',
  instructions: 'You answer questions about the weather. Use the tool.',
  tools: [getWeather],
});
const input = 'What is the weather in Paris?';
if (process.argv[2] === 'stream') {
  const result = await run(agent, input, { stream: true });
  for await (const _ of result.toStream()) { /* drain */ }
  await result.completed;
  console.log(result.finalOutput);
} else {
  console.log((await run(agent, input)).finalOutput);
}
