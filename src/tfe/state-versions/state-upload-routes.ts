import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { DomainError, isDomainError } from '../../shared/errors.js';
import { uploadLimitMessage } from '../../http/error-kind.js';
import type { StateUploadService } from './state-upload-service.js';

/**
 * The one-time upload URLs, `PUT /v1/object/<secret>` (reference 4.4): outside /api/v2
 * and without Authorization, the secret in the path being the credential. Bodies are
 * streamed to the blob store as they arrive, never buffered, up to `maxUploadSize`.
 */
export async function registerStateUploadRoutes(
  app: FastifyInstance,
  deps: { uploads: StateUploadService; maxUploadSize: number },
): Promise<void> {
  // A scope of its own so that the raw-stream parser applies to these routes only.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.put<{ Params: { token: string } }>(
      '/v1/object/:token',
      { bodyLimit: deps.maxUploadSize, config: { tfePublic: true } },
      async (request, reply) => {
        const declared = Number(request.headers['content-length']);
        const tooLarge = () => new DomainError('too_large', uploadLimitMessage(deps.maxUploadSize));
        if (Number.isFinite(declared) && declared > deps.maxUploadSize) throw tooLarge();
        const body = (request.body as Readable | undefined) ?? request.raw;
        const result = await deps.uploads
          .upload(request.params.token, body, Number.isFinite(declared) ? declared : undefined)
          // A body without a length is counted as it streams: past the limit, the same answer.
          .catch((err: unknown) => {
            throw isDomainError(err) && err.kind === 'too_large' ? tooLarge() : err;
          });
        request.tfeAuditStateVersion = result.stateVersionId;
        if (result.stored)
          request.log.info({ stateVersionId: result.stateVersionId, target: result.target }, 'state content uploaded');
        return reply.status(200).send();
      },
    );
  });
}
