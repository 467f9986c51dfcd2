// node langchain.mjs anthropic|openai   (recorder at $REC_URL, default http://127.0.0.1:8787)
// withStructuredOutput with default options: one invoke, then one stream.
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

const url = process.env.REC_URL || 'http://127.0.0.1:8787';
const model = process.argv[2] === 'anthropic'
  ? new ChatAnthropic({ model: 'claude-sonnet-4-5', apiKey: 'sk-ant-test', anthropicApiUrl: url })
  : new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'sk-test', configuration: { baseURL: `${url}/v1` } });

const Person = z.object({
  name: z.string().describe('The person\'s name'),
  age: z.number().describe('Age in years'),
  email: z.string().optional(),
}).describe('Information about a person');
const structured = model.withStructuredOutput(Person);
const prompt = 'Alice is 30 years old.';
console.log(JSON.stringify(await structured.invoke(prompt)));
let last;
for await (const chunk of await structured.stream(prompt)) last = chunk;
console.log(JSON.stringify(last));
