// Bare Fastify answering one fixed JSON body: the most a Fastify JSON server does on this machine.
// Usage: node ceiling-server.js <port>
import Fastify from 'fastify';

const port = Number(process.argv[2]);
const app = Fastify({ logger: false });
const body = { status: 'ok' };
app.get('/', async () => body);
app.get('/healthz', async () => body);

const stop = () => {
  void app.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

await app.listen({ host: '127.0.0.1', port });
