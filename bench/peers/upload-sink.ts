// Bare Node.js upload sink: each PUT body is streamed to a file while its MD5 is computed,
// then fsynced before the answer, i.e. the least work a durable upload endpoint can do.
// Usage: node upload-sink.js <port> <dir>
import { createHash, randomBytes } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';

const port = Number(process.argv[2]);
const dir = process.argv[3] as string;

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/ready') {
    res.end('ok');
    return;
  }
  if (req.method !== 'PUT') {
    res.statusCode = 405;
    res.end();
    return;
  }
  void receive(req).then(
    (md5) => {
      res.statusCode = 201;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ md5 }));
    },
    (err: unknown) => {
      res.statusCode = 500;
      res.end(err instanceof Error ? err.message : 'error');
    },
  );
});

async function receive(req: http.IncomingMessage): Promise<string> {
  const path = join(dir, randomBytes(8).toString('hex'));
  const fh = await open(path, 'w');
  const hash = createHash('md5');
  try {
    for await (const chunk of req) {
      hash.update(chunk as Buffer);
      await fh.write(chunk as Buffer);
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  // The bytes were durable; drop them so a long run does not fill the disk.
  await rm(path, { force: true });
  return hash.digest('hex');
}

server.keepAliveTimeout = 60_000;
server.requestTimeout = 0;
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
server.listen(port, '127.0.0.1');
