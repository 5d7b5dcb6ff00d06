import { X509Certificate } from 'node:crypto';
import type { Clock } from '../../../shared/clock.js';
import { parseCertificate } from '../../crypto/cert-parser.js';
import { invalid, notFound } from '../../../shared/errors.js';
import type { AuthMount } from '../auth-mount.js';
import type { AuthMountService, LoginOutcome } from '../auth-mount-service.js';
import type { AuthRoleRepo } from '../auth-role-repo.js';
import { NO_MATCH, certNames, chainsTo, namesAllowed, parseTrusted, updateCertRole } from './cert-auth.js';
import type { CertRole, CertRoleFields } from './cert-auth.js';

/**
 * The TLS certificate method: trusted certificates, and login with the client certificate
 * of the connection. A certificate this server issued is also checked against the
 * revocation records its CRLs are built from (`isRevoked`), so a revoked one cannot log in.
 */
export class CertAuthService {
  constructor(
    private readonly deps: {
      roles: AuthRoleRepo;
      auth: AuthMountService;
      clock: Clock;
      /** True when a PKI mount of this server holds the serial (lowercase hex) as revoked. */
      isRevoked: (serialHex: string) => Promise<boolean>;
    },
  ) {}

  async list(mount: AuthMount): Promise<string[]> {
    return this.deps.roles.names(mount.id);
  }

  async read(mount: AuthMount, name: string): Promise<CertRole> {
    const r = await this.deps.roles.get<CertRole>(mount.id, name);
    if (!r) throw notFound(`no certificate named "${name}"`);
    return r.data;
  }

  async write(mount: AuthMount, name: string, body: Record<string, unknown>, f: CertRoleFields): Promise<void> {
    if (name === '') throw invalid('missing name', 'name');
    const current = await this.deps.roles.get<CertRole>(mount.id, name);
    const data = updateCertRole(current?.data, body, f);
    await this.deps.roles.put(mount.id, { name, roleId: null, data }, this.deps.clock.now());
  }

  async delete(mount: AuthMount, name: string): Promise<void> {
    await this.deps.roles.delete(mount.id, name);
  }

  /**
   * Login with the certificate chain the client presented (leaf first, DER). Tries the named
   * certificate entry, or every entry; any failure reads NO_MATCH.
   */
  login(mount: AuthMount, name: string, chain: Buffer[], clientIp: string): Promise<LoginOutcome> {
    return this.deps.auth.login(() => this.#login(mount, name, chain, clientIp));
  }

  async #login(mount: AuthMount, name: string, chain: Buffer[], clientIp: string): Promise<LoginOutcome> {
    const [leafDer, ...rest] = chain;
    if (!leafDer) throw invalid(NO_MATCH);
    let leaf: X509Certificate;
    let presented: X509Certificate[];
    try {
      leaf = new X509Certificate(leafDer);
      presented = rest.map((d) => new X509Certificate(d));
    } catch {
      throw invalid(NO_MATCH);
    }
    const candidates = name
      ? [await this.deps.roles.get<CertRole>(mount.id, name)].filter((r) => r !== undefined)
      : await this.deps.roles.all<CertRole>(mount.id);
    const now = this.deps.clock.now();
    const names = certNames(leaf);
    const match = candidates.find(
      (r) => namesAllowed(r.data, names) && chainsTo(leaf, presented, parseTrusted(r.data.certificate), now),
    );
    if (!match) throw invalid(NO_MATCH);
    const parsed = parseCertificate(leafDer);
    if (await this.deps.isRevoked(parsed.serialHex)) throw invalid(NO_MATCH);
    const colon = (b: Buffer | undefined) => (b ? (b.toString('hex').match(/../g) ?? []).join(':') : '');
    const meta: Record<string, string> = {
      cert_name: match.name,
      common_name: names.commonName,
      serial_number: colon(parsed.serial),
      subject_key_id: colon(parsed.extensions.subjectKeyId),
      authority_key_id: colon(parsed.extensions.authorityKeyId),
    };
    return this.deps.auth.issueToken(
      mount,
      match.data,
      { displayName: `cert-${match.data.display_name || match.name}`, meta },
      clientIp,
    );
  }
}
