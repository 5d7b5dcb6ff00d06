import type { Acl } from '../acl/policy.js';
import type { PolicyService } from '../acl/policy-service.js';
import type { AuthMount } from '../auth/auth-mount.js';
import type { AuthMountService } from '../auth/auth-mount-service.js';
import type { MountService } from '../mounts/mount-service.js';
import { readToken } from '../pki-dispatch.js';
import type { TokenService } from '../tokens/token-service.js';
import { buildVaultOpenApi } from '../vault-openapi.js';
import type { DescribedRoute } from '../vault-openapi.js';
import type { SystemRoute } from './system-route.js';

/**
 * `GET /v1/sys/internal/specs/openapi`: an OpenAPI 3 document of the /v1 paths the calling
 * token can reach, from the routes' field definitions (as Vault answers it). Any caller may
 * ask; without a valid token the document holds the unauthenticated paths only.
 * https://developer.hashicorp.com/vault/api-docs/system/internal-specs-openapi
 */
export function openApiRoutes(deps: {
  systemRoutes: () => readonly DescribedRoute[];
  mountRoutes: () => readonly DescribedRoute[];
  /** The routes of an auth method (approle, jwt, cert) inside each of its mounts. */
  authRoutes: (mount: AuthMount) => readonly DescribedRoute[];
  mounts: MountService;
  authMounts: AuthMountService;
  tokens: TokenService;
  policies: PolicyService;
  version: string;
}): SystemRoute[] {
  return [
    {
      pattern: 'sys/internal/specs/openapi',
      operations: ['read'],
      unauthenticated: true,
      mountType: 'system',
      summary: 'This API, as an OpenAPI document of the paths the token can reach',
      handler: async (ctx) => {
        const token = readToken(ctx.request);
        const auth = token ? await deps.tokens.authenticate(token, { spendUse: false }) : undefined;
        const acl: Acl | undefined = auth ? await deps.policies.aclFor(auth.info.policies) : undefined;
        const mounts = (await deps.mounts.list()).map((m) => m.path.replace(/\/+$/, ''));
        const authMounts = (await deps.authMounts.list()).map((m) => ({ path: m.path, routes: deps.authRoutes(m) }));
        const doc = buildVaultOpenApi({
          systemRoutes: deps.systemRoutes(),
          mountRoutes: deps.mountRoutes(),
          mounts,
          authMounts,
          visible: (stem) => acl?.reachesUnder(stem) ?? false,
          version: deps.version,
        });
        return { kind: 'raw', contentType: 'application/json', body: JSON.stringify(doc) };
      },
    },
  ];
}
