// node assemble.mjs <exchanges.jsonl> <client@version> <how> > capture.json
import fs from 'node:fs';
const [file, client, how] = process.argv.slice(2);
const exchanges = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  .map(({ status, ...x }) => (status && status !== 200 ? { ...x, status } : x));
process.stdout.write(JSON.stringify({ client, how, exchanges }, null, 2) + '\n');
