import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * The web UI (ui/, built by Vite into dist/ui): hashed assets under /ui/assets/ cached for a
 * year, and index.html for every other /ui/ path (the app routes in the browser), never
 * cached. A strict Content-Security-Policy: scripts, styles and connections only from this
 * origin, no inline script or style, no framing. `/` redirects to /ui/.
 */
export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': UI_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Where the built UI is: dist/ui beside dist/src (this file is dist/src/http/ui-routes.js). */
export const DEFAULT_UI_DIR = fileURLToPath(new URL('../../ui/', import.meta.url));

export async function registerUiRoutes(app: FastifyInstance, opts: { dir?: string } = {}): Promise<void> {
  const dir = opts.dir ?? DEFAULT_UI_DIR;
  const indexPath = `${dir}index.html`;
  const built = existsSync(indexPath);
  const index = built ? readFileSync(indexPath) : undefined;

  app.get('/', async (_request, reply) => reply.redirect('/ui/', 302));

  const sendIndex = async (_request: unknown, reply: FastifyReply) => {
    if (!index)
      return reply
        .status(503)
        .type('text/plain; charset=utf-8')
        .send('The web UI is not built: run `npm run build:ui` (npm ci and npm start build it).\n');
    return reply
      .headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache' })
      .type('text/html; charset=utf-8')
      .send(index);
  };
  app.get('/ui', async (_request, reply) => reply.redirect('/ui/', 302));
  app.get('/ui/', sendIndex);
  app.get('/ui/*', async (request, reply) => {
    // A missing asset is a 404, not the app: a stale page must not get HTML for its script.
    if ((request.params as { '*': string })['*'].startsWith('assets/'))
      return reply.status(404).type('text/plain; charset=utf-8').send('not found\n');
    return sendIndex(request, reply);
  });
  if (built) {
    await app.register(fastifyStatic, {
      root: `${dir}assets`,
      prefix: '/ui/assets/',
      index: false,
      wildcard: false,
      cacheControl: false,
      setHeaders: (res) => {
        res.setHeader('cache-control', 'public, max-age=31536000, immutable');
        for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
      },
    });
  }
}
