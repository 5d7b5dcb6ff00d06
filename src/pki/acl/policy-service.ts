import type { Clock } from '../../shared/clock.js';
import { PeerChanges } from '../../shared/peer-changes.js';
import {
  DEFAULT_POLICY,
  DEFAULT_POLICY_TEXT,
  ROOT_POLICY,
  assertPolicyDeletable,
  assertPolicyWritable,
  buildAcl,
  decodePolicyText,
  normalizePolicyName,
  parsePolicy,
} from './policy.js';
import type { Acl, NamedPolicy, Policy } from './policy.js';
import type { PolicyRepo } from './policy-repo.js';

/**
 * How long a node trusts parsed policies and compiled ACLs. Changes made on this node
 * apply at once, on every worker of this machine (decision 0056); changes made on another
 * node apply here within this window. Tokens
 * themselves are never cached, so a revoked or expired token is refused immediately.
 */
const CACHE_MS = 1000;

/** ACL policies: storage of the text, the built-in `root` and `default`, and compiled ACLs. */
export class PolicyService {
  private readonly acls = new Map<string, { at: number; acl: Acl }>();
  /** The same entries by the policy list object they were found for; `#generation` moves when policies change. */
  readonly #byList = new WeakMap<readonly string[], { at: number; acl: Acl; generation: number }>();
  #generation = 0;
  readonly #peers: PeerChanges;
  /** True once another worker reported a change since the last look. */
  readonly #peersMoved: () => boolean;

  /** A policy changed through this process: forget every ACL here, and on the other workers. */
  #forget(): void {
    this.#drop();
    this.#peers.changed();
  }

  #drop(): void {
    this.acls.clear();
    this.#generation++;
  }

  /** Another worker changed a policy since the last look: every ACL compiled before is dropped. */
  #syncPeers(): void {
    if (this.#peersMoved()) this.#drop();
  }

  constructor(private readonly deps: { repo: PolicyRepo; clock: Clock; peers?: PeerChanges }) {
    this.#peers = deps.peers ?? new PeerChanges();
    this.#peersMoved = this.#peers.watch();
  }

  /** All policy names, built-ins included, sorted. */
  async list(): Promise<string[]> {
    const names = new Set(await this.deps.repo.listNames());
    names.add(DEFAULT_POLICY);
    names.add(ROOT_POLICY);
    return [...names].sort();
  }

  /** The policy text; undefined when no such policy exists. `root` has no text. */
  async read(rawName: string): Promise<{ name: string; text: string } | undefined> {
    const name = normalizePolicyName(rawName);
    if (name === ROOT_POLICY) return { name, text: '' };
    const stored = await this.deps.repo.find(name);
    if (stored) return { name, text: stored.text };
    if (name === DEFAULT_POLICY) return { name, text: DEFAULT_POLICY_TEXT };
    return undefined;
  }

  async exists(rawName: string): Promise<boolean> {
    return (await this.read(rawName)) !== undefined;
  }

  /** Stores a policy after checking that it parses (HCL or JSON, or base64 of either). */
  async write(rawName: string, text: string): Promise<void> {
    const name = normalizePolicyName(rawName);
    assertPolicyWritable(name);
    const plain = decodePolicyText(text);
    parsePolicy(plain);
    await this.deps.repo.upsert(name, plain, this.deps.clock.now());
    this.#forget();
  }

  /** Deleting a missing policy succeeds, as in Vault. */
  async delete(rawName: string): Promise<void> {
    const name = normalizePolicyName(rawName);
    assertPolicyDeletable(name);
    await this.deps.repo.delete(name);
    this.#forget();
  }

  /**
   * aclFor answered from the cache without waiting, or undefined. Keyed by the list object
   * too, so a token remembered by TokenService (the same list every time) skips the sort.
   */
  aclForNow(policyNames: readonly string[]): Acl | undefined {
    this.#syncPeers();
    const nowMs = this.deps.clock.now().getTime();
    const byList = this.#byList.get(policyNames);
    if (byList && byList.generation === this.#generation && nowMs - byList.at < CACHE_MS && nowMs >= byList.at)
      return byList.acl;
    const hit = this.acls.get([...policyNames].sort().join('\n'));
    if (!hit || nowMs - hit.at >= CACHE_MS || nowMs < hit.at) return undefined;
    this.#byList.set(policyNames, { ...hit, generation: this.#generation });
    return hit.acl;
  }

  /** The compiled ACL for a set of policy names; names without a policy grant nothing. */
  async aclFor(policyNames: readonly string[]): Promise<Acl> {
    const cached = this.aclForNow(policyNames);
    if (cached) return cached;
    const key = [...policyNames].sort().join('\n');
    const nowMs = this.deps.clock.now().getTime();
    const generation = this.#generation;
    const acl = await this.compile(policyNames);
    // Compiled from what was read before a change (here or on another worker): used once, not kept.
    this.#syncPeers();
    if (generation !== this.#generation) return acl;
    if (this.acls.size > 1000) this.acls.clear();
    this.acls.set(key, { at: nowMs, acl });
    return acl;
  }

  private async compile(policyNames: readonly string[]): Promise<Acl> {
    if (policyNames.includes(ROOT_POLICY)) return buildAcl([{ name: ROOT_POLICY }]);
    const stored = await this.deps.repo.findMany(policyNames);
    const named: NamedPolicy[] = [];
    for (const s of stored) named.push({ name: s.name, policy: safeParse(s.text) });
    if (policyNames.includes(DEFAULT_POLICY) && !stored.some((s) => s.name === DEFAULT_POLICY)) {
      named.push({ name: DEFAULT_POLICY, policy: parsePolicy(DEFAULT_POLICY_TEXT) });
    }
    return buildAcl(named);
  }
}

/** A stored policy was valid when written; should parsing rules tighten later, it grants nothing. */
function safeParse(text: string): Policy {
  try {
    return parsePolicy(text);
  } catch {
    return { rules: [] };
  }
}
