/**
 * The ACME protocol (RFC 8555) under the four directory prefixes of every PKI mount:
 * `acme/`, `issuer/:ref/acme/`, `roles/:role/acme/`, `issuer/:ref/roles/:role/acme/`.
 * JWS checks, nonces, problem documents and the Location / Link / Retry-After /
 * Replay-Nonce headers live here; the service sees verified keys and payloads only.
 * https://www.rfc-editor.org/rfc/rfc8555#section-7
 * https://developer.hashicorp.com/vault/api-docs/secret/pki/issuance#acme-certificate-issuance
 * https://www.rfc-editor.org/rfc/rfc9773 (renewalInfo)
 */
import type { KeyObject } from 'node:crypto';
import { isDomainError } from '../../shared/errors.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import { AcmeError, checkRevocationReason, renewalWindow } from './acme.js';
import type { AcmeAccount, AcmeAuthorization, AcmeErrorType, AcmeOrder } from './acme.js';
import { jwkKey, jwkThumbprint, jwsSignatureValid, parseJws, publicJwk, readEabBinding } from './acme-jws.js';
import type { ParsedJws } from './acme-jws.js';
import type { AcmeDirectory, AcmeService } from './acme-service.js';
import { serialOfCertId } from './acme-service.js';
import { certificateIdOf, certificateSerialAndKey } from './acme-certificates.js';

const PREFIXES = ['', 'issuer/:ref/', 'roles/:role/', 'issuer/:ref/roles/:role/'];
const JSON_TYPE = 'application/json';
const PROBLEM_TYPE = 'application/problem+json';
/** Seconds a client should wait before polling something still being worked on. */
const RETRY_AFTER = '1';
/** RFC 9773: how often clients should ask for renewal information again. */
const ARI_RETRY_AFTER = '21600';

const STATUS_OF: Partial<Record<AcmeErrorType, number>> = {
  unauthorized: 403,
  orderNotReady: 403,
  userActionRequired: 403,
  externalAccountRequired: 403,
  rateLimited: 429,
  serverInternal: 500,
};

/** A request that passed the JWS checks: its payload and who signed it. */
interface Signed {
  jws: ParsedJws;
  payload: unknown;
  /** For `kid` requests. */
  account: AcmeAccount | undefined;
  /** For `jwk` requests. */
  jwk: Record<string, unknown> | undefined;
  key: KeyObject;
}

type Handler = (ctx: PkiRequestContext, dir: AcmeDirectory) => Promise<PkiResult>;

export function acmeProtocolRoutes(acme: AcmeService): PkiRoute[] {
  const keys = new Map<string, KeyObject>();

  /** Every answer carries a fresh nonce and the directory link; errors are problem documents. */
  const serve =
    (handler: Handler) =>
    async (ctx: PkiRequestContext): Promise<PkiResult> => {
      let dir: AcmeDirectory | undefined;
      try {
        dir = await acme.directory(ctx.mount, { issuerRef: ctx.params.ref, role: ctx.params.role });
        await withNonce(ctx, dir);
        ctx.reply.header('Link', `<${dir.baseUrl}directory>;rel="index"`);
        return await handler(ctx, dir);
      } catch (err) {
        if (dir && !ctx.reply.hasHeader('Replay-Nonce')) await withNonce(ctx, dir).catch(() => undefined);
        return problem(ctx, err);
      }
    };

  const withNonce = async (ctx: PkiRequestContext, dir: AcmeDirectory): Promise<void> => {
    ctx.reply.header('Replay-Nonce', await acme.newNonce(dir.mount.id)).header('Cache-Control', 'no-store');
  };

  const urlOf = (dir: AcmeDirectory, rest: string): string => `${dir.baseUrl}${rest}`;

  /**
   * The JWS checks of RFC 8555 section 6: the url is this request's, the nonce ours and
   * unused, the key the account's (`kid`) or the one given (`jwk`), the signature good.
   */
  async function verify(ctx: PkiRequestContext, dir: AcmeDirectory, use: 'jwk' | 'kid' | 'either'): Promise<Signed> {
    const jws = parseJws(ctx.body);
    const expectedUrl = urlOf(dir, ctx.path.slice(dir.prefix.length));
    if (jws.header.url !== expectedUrl)
      throw new AcmeError('unauthorized', `the JWS url ${JSON.stringify(jws.header.url)} is not this request's URL`);
    const nonce = await acme.checkNonce(dir.mount.id, jws.header.nonce);
    if (!nonce) throw new AcmeError('badNonce', 'the nonce was not issued by this server');
    let account: AcmeAccount | undefined;
    let key: KeyObject;
    if (jws.header.jwk) {
      if (use === 'kid') throw new AcmeError('malformed', 'this request must be signed with the account key id (kid)');
      key = jwkKey(jws.header.jwk, jws.header.alg);
    } else {
      if (use === 'jwk') throw new AcmeError('malformed', 'this request must carry its key (jwk), not a kid');
      const prefix = urlOf(dir, 'account/');
      const kid = jws.header.kid!;
      if (!kid.startsWith(prefix))
        throw new AcmeError('accountDoesNotExist', 'the kid is not an account of this directory');
      account = await acme.accountFor(dir, kid.slice(prefix.length));
      key = accountKey(account, jws);
    }
    if (!jwsSignatureValid(jws, key)) throw new AcmeError('malformed', 'the JWS signature does not verify');
    await acme.useNonce(nonce);
    return { jws, payload: jws.payload, account, jwk: jws.header.jwk, key };
  }

  function accountKey(account: AcmeAccount, jws: ParsedJws): KeyObject {
    const cacheKey = `${account.id}\n${account.thumbprint}\n${jws.header.alg}`;
    let key = keys.get(cacheKey);
    if (!key) {
      try {
        key = jwkKey(account.jwk, jws.header.alg);
      } catch {
        throw new AcmeError('malformed', `the account key does not sign with ${jws.header.alg}`);
      }
      if (keys.size >= 10_000) keys.delete(keys.keys().next().value!);
      keys.set(cacheKey, key);
    }
    return key;
  }

  const json = (ctx: PkiRequestContext, body: unknown, status = 200, location?: string): PkiResult => {
    if (location) ctx.reply.header('Location', location);
    return { kind: 'raw', status, contentType: JSON_TYPE, body: JSON.stringify(body) };
  };

  // ----- resource documents (RFC 8555 section 7.1)

  const accountDoc = (dir: AcmeDirectory, a: AcmeAccount) => ({
    status: a.status,
    contact: a.contact,
    termsOfServiceAgreed: a.termsAgreed,
    orders: urlOf(dir, 'orders'),
    createdAt: a.createdAt.toISOString(),
    ...(a.eab ? { externalAccountBinding: { kid: a.eab.id } } : {}),
  });

  const orderDoc = (dir: AcmeDirectory, o: AcmeOrder) => ({
    status: o.status,
    expires: o.expiresAt.toISOString(),
    identifiers: o.identifiers,
    authorizations: o.authzIds.map((id) => urlOf(dir, `authorization/${id}`)),
    finalize: urlOf(dir, `order/${o.id}/finalize`),
    ...(o.status === 'valid' ? { certificate: urlOf(dir, `order/${o.id}/cert`) } : {}),
    ...(o.error ? { error: problemDoc(o.error.type, o.error.detail) } : {}),
    ...(o.replaces ? { replaces: o.replaces } : {}),
  });

  const challengeDoc = (dir: AcmeDirectory, a: AcmeAuthorization, c: AcmeAuthorization['challenges'][number]) => ({
    type: c.type,
    url: urlOf(dir, `challenge/${a.id}/${c.type}`),
    status: c.status,
    token: a.token,
    ...(c.validated ? { validated: c.validated.toISOString() } : {}),
    ...(c.error && c.status !== 'pending' ? { error: problemDoc(c.error.type, c.error.detail) } : {}),
  });

  const authzDoc = (dir: AcmeDirectory, a: AcmeAuthorization) => ({
    identifier: a.identifier,
    status: a.status,
    expires: a.expiresAt.toISOString(),
    challenges: a.challenges
      .filter((c) => a.status === 'pending' || c.status !== 'pending')
      .map((c) => challengeDoc(dir, a, c)),
    ...(a.wildcard ? { wildcard: true } : {}),
  });

  const retryIfBusy = (ctx: PkiRequestContext, busy: boolean): void => {
    if (busy) ctx.reply.header('Retry-After', RETRY_AFTER);
  };

  const payloadRecord = (s: Signed): Record<string, unknown> => {
    if (s.payload === undefined) return {};
    if (typeof s.payload !== 'object' || s.payload === null || Array.isArray(s.payload))
      throw new AcmeError('malformed', 'the payload must be a JSON object');
    return s.payload as Record<string, unknown>;
  };

  const postAsGet = (s: Signed): void => {
    if (s.jws.payloadB64 !== '')
      throw new AcmeError('malformed', 'this resource is fetched with POST-as-GET (empty payload)');
  };

  // ----- handlers

  const directory: Handler = async (ctx, dir) =>
    json(ctx, {
      newNonce: urlOf(dir, 'new-nonce'),
      newAccount: urlOf(dir, 'new-account'),
      newOrder: urlOf(dir, 'new-order'),
      revokeCert: urlOf(dir, 'revoke-cert'),
      keyChange: urlOf(dir, 'key-change'),
      renewalInfo: urlOf(dir, 'renewal-info'),
      meta: { externalAccountRequired: dir.config.eabPolicy !== 'not-required' },
    });

  const newNonce: Handler = async (ctx) => ({
    kind: 'raw',
    status: ctx.request.method === 'HEAD' ? 200 : 204,
    contentType: 'text/plain',
    body: '',
  });

  const newAccount: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'jwk');
    const p = payloadRecord(s);
    const jwk = publicJwk(s.jwk!);
    const contact = p.contact === undefined ? undefined : (p.contact as string[]);
    const eab =
      p.externalAccountBinding === undefined
        ? undefined
        : readEabBinding(p.externalAccountBinding, { url: urlOf(dir, 'new-account'), accountJwk: jwk });
    const { account, created } = await acme.newAccount(dir, {
      jwk,
      thumbprint: jwkThumbprint(jwk),
      contact,
      termsOfServiceAgreed: p.termsOfServiceAgreed === true,
      onlyReturnExisting: p.onlyReturnExisting === true,
      eab,
    });
    return json(ctx, accountDoc(dir, account), created ? 201 : 200, urlOf(dir, `account/${account.id}`));
  };

  const accountUpdate: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    if (s.account!.id !== ctx.params.id) throw new AcmeError('unauthorized', 'the kid is not this account');
    const p = payloadRecord(s);
    const updated = await acme.updateAccount(dir, s.account!, {
      contact: p.contact as string[] | undefined,
      status: p.status as string | undefined,
    });
    return json(ctx, accountDoc(dir, updated));
  };

  const keyChange: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    const inner = parseJws(s.payload, { inner: true });
    if (!inner.header.jwk) throw new AcmeError('malformed', 'the inner JWS must carry the new key (jwk)');
    if (inner.header.url !== s.jws.header.url)
      throw new AcmeError('malformed', 'the inner JWS url differs from the outer');
    if (!jwsSignatureValid(inner, jwkKey(inner.header.jwk, inner.header.alg)))
      throw new AcmeError('malformed', 'the inner JWS signature does not verify');
    const p = inner.payload as Record<string, unknown> | undefined;
    if (!p || p.account !== urlOf(dir, `account/${s.account!.id}`))
      throw new AcmeError('malformed', 'the inner payload must name this account');
    if (
      typeof p.oldKey !== 'object' ||
      p.oldKey === null ||
      jwkThumbprint(p.oldKey as Record<string, unknown>) !== s.account!.thumbprint
    )
      throw new AcmeError('malformed', 'oldKey is not the account key');
    const jwk = publicJwk(inner.header.jwk);
    try {
      const a = await acme.changeKey(dir, s.account!, { jwk, thumbprint: jwkThumbprint(jwk) });
      return json(ctx, accountDoc(dir, a));
    } catch (err) {
      const other = isDomainError(err) && err.kind === 'conflict' ? err.meta?.accountId : undefined;
      if (typeof other === 'string') ctx.reply.header('Location', urlOf(dir, `account/${other}`));
      throw err;
    }
  };

  const newOrder: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    const p = payloadRecord(s);
    const { order } = await acme.newOrder(dir, s.account!, { ...p, identifiers: p.identifiers });
    return json(ctx, orderDoc(dir, order), 201, urlOf(dir, `order/${order.id}`));
  };

  const orders: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    postAsGet(s);
    const ids = await acme.orderIds(dir, s.account!);
    return json(ctx, { orders: ids.map((id) => urlOf(dir, `order/${id}`)) });
  };

  const order: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    postAsGet(s);
    const o = await acme.order(dir, s.account!, ctx.params.id!);
    retryIfBusy(ctx, o.status === 'processing');
    return json(ctx, orderDoc(dir, o));
  };

  const finalize: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    const p = payloadRecord(s);
    if (typeof p.csr !== 'string' || !/^[A-Za-z0-9_-]+$/.test(p.csr))
      throw new AcmeError('malformed', '"csr" must be the base64url DER of a CSR');
    const o = await acme.finalize(dir, s.account!, ctx.params.id!, Buffer.from(p.csr, 'base64url'));
    return json(ctx, orderDoc(dir, o), 200, urlOf(dir, `order/${o.id}`));
  };

  const certificate: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    postAsGet(s);
    const chain = await acme.certificate(dir, s.account!, ctx.params.id!);
    return { kind: 'raw', status: 200, contentType: 'application/pem-certificate-chain', body: chain };
  };

  const authorization: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    const p = payloadRecord(s);
    if (s.jws.payloadB64 !== '' && p.status !== 'deactivated')
      throw new AcmeError('malformed', 'an authorization can only be deactivated ({"status":"deactivated"})');
    const a =
      p.status === 'deactivated'
        ? await acme.deactivateAuthorization(dir, s.account!, ctx.params.id!)
        : await acme.authorization(dir, s.account!, ctx.params.id!);
    retryIfBusy(
      ctx,
      a.challenges.some((c) => c.status === 'processing'),
    );
    return json(ctx, authzDoc(dir, a));
  };

  const challenge: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'kid');
    const p = payloadRecord(s);
    const type = ctx.params.type!;
    let a: AcmeAuthorization;
    if (s.jws.payloadB64 === '') a = await acme.authorization(dir, s.account!, ctx.params.authz!);
    else {
      if (Object.keys(p).length > 0) throw new AcmeError('malformed', 'a challenge response is an empty object {}');
      a = (await acme.respondToChallenge(dir, s.account!, ctx.params.authz!, type)).authz;
    }
    const c = a.challenges.find((x) => x.type === type);
    if (!c) throw new AcmeError('malformed', `the authorization has no ${type} challenge`);
    ctx.reply.header('Link', `<${urlOf(dir, `authorization/${a.id}`)}>;rel="up"`);
    retryIfBusy(ctx, c.status === 'processing');
    return json(ctx, challengeDoc(dir, a, c));
  };

  const revokeCert: Handler = async (ctx, dir) => {
    const s = await verify(ctx, dir, 'either');
    const p = payloadRecord(s);
    if (typeof p.certificate !== 'string' || !/^[A-Za-z0-9_-]+$/.test(p.certificate))
      throw new AcmeError('malformed', '"certificate" must be the base64url DER of a certificate');
    checkRevocationReason(p.reason);
    const cert = certificateSerialAndKey(Buffer.from(p.certificate, 'base64url'));
    if (s.account) await acme.revoke(dir, { account: s.account }, cert.serial);
    else {
      if (!cert.publicKey.equals(s.key.export({ format: 'der', type: 'spki' })))
        throw new AcmeError('unauthorized', "the request is signed neither by an account nor by the certificate's key");
      await acme.revoke(dir, { certificateKey: true }, cert.serial);
    }
    return { kind: 'raw', status: 200, contentType: JSON_TYPE, body: '' };
  };

  const renewalInfo: Handler = async (ctx, dir) => {
    const certId = ctx.params.certid!;
    const serial = serialOfCertId(certId);
    const o = serial ? await acme.orderOfSerial(dir.mount.id, serial) : undefined;
    if (!o?.certChain || certificateIdOf(o.certChain) !== certId)
      return problem(ctx, new AcmeError('malformed', 'no certificate of this server has that identifier'), 404);
    const { notBefore, notAfter } = certificateSerialAndKey(o.certChain);
    const window = renewalWindow(notBefore, notAfter, await acme.isRevoked(dir.mount.id, serial!), acme.now());
    ctx.reply.header('Retry-After', ARI_RETRY_AFTER);
    return json(ctx, { suggestedWindow: { start: window.start.toISOString(), end: window.end.toISOString() } });
  };

  const routes: PkiRoute[] = [];
  const add = (path: string, operations: PkiRoute['operations'], h: Handler) => {
    for (const prefix of PREFIXES)
      routes.push({ pattern: `${prefix}acme/${path}`, operations, handler: serve(h), unauthenticated: true });
  };
  const post: PkiRoute['operations'] = ['update', 'create'];
  add('directory', ['read'], directory);
  add('new-nonce', ['read'], newNonce);
  add('new-account', post, newAccount);
  add('account/:id', post, accountUpdate);
  add('key-change', post, keyChange);
  add('new-order', post, newOrder);
  add('orders', post, orders);
  add('order/:id', post, order);
  add('order/:id/finalize', post, finalize);
  add('order/:id/cert', post, certificate);
  add('authorization/:id', post, authorization);
  add('challenge/:authz/:type', post, challenge);
  add('revoke-cert', post, revokeCert);
  add('renewal-info/:certid', ['read'], renewalInfo);
  return routes;
}

function problemDoc(type: AcmeErrorType, detail: string) {
  return { type: `urn:ietf:params:acme:error:${type}`, detail };
}

/** An error as an RFC 7807 problem document with the ACME error type (RFC 8555 section 6.7). */
export function problem(ctx: PkiRequestContext, err: unknown, statusOverride?: number): PkiResult {
  let type: AcmeErrorType = 'serverInternal';
  let status = 500;
  let detail = 'internal error';
  if (err instanceof AcmeError) {
    type = err.acmeType;
    status = STATUS_OF[type] ?? 400;
    detail = err.message;
  } else if (isDomainError(err)) {
    const byKind: Record<string, [AcmeErrorType, number]> = {
      not_found: ['malformed', 404],
      invalid: ['malformed', 400],
      forbidden: ['unauthorized', 403],
      unauthenticated: ['unauthorized', 403],
      conflict: ['malformed', 409],
      too_large: ['malformed', 413],
    };
    const hit = byKind[err.kind];
    if (hit) [type, status, detail] = [hit[0], hit[1], err.message];
  } else if (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { statusCode?: unknown }).statusCode === 'number'
  ) {
    const code = (err as { statusCode: number }).statusCode;
    if (code >= 400 && code < 500) [type, status, detail] = ['malformed', code, (err as Error).message];
  }
  if (status >= 500) ctx.request.log.error({ err }, 'ACME request failed');
  return {
    kind: 'raw',
    status: statusOverride ?? status,
    contentType: PROBLEM_TYPE,
    body: JSON.stringify({ ...problemDoc(type, detail), status: statusOverride ?? status }),
  };
}
