// A tiny OpenAI-shaped engine, run as its own process, for tests that need an
// engine they can inspect or misbehave: it records every POST it receives
// (GET /_seen returns them) and, with --ignore-sigterm, will not stop politely.
//
//   node fake-engine.mjs --port 0 [--ignore-sigterm]
import http from 'node:http';

const args = process.argv.slice(2);
const port = Number(args.includes('--port') ? args[args.indexOf('--port') + 1] : 0);
if (args.includes('--ignore-sigterm')) process.on('SIGTERM', () => console.log('fake engine: ignoring SIGTERM'));

const seen = [];
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    const reply = (status, obj) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(obj));
    };
    if (req.method === 'GET' && req.url === '/health') return reply(200, { status: 'ok' });
    if (req.method === 'GET' && req.url === '/_seen') return reply(200, seen);
    if (req.method === 'POST' && req.url === '/v1/chat/completions') {
      const request = JSON.parse(body);
      seen.push({ headers: req.headers, body: request });
      return reply(200, {
        id: 'chatcmpl-fake', object: 'chat.completion', created: 1, model: request.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
    }
    return reply(404, { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } });
  });
});
server.listen(port, '127.0.0.1', () => console.log(`fake engine listening on 127.0.0.1:${server.address().port}`));
