import type { VaultOperation } from '../pki-route.js';

/**
 * Path patterns for routes inside a mount and for system routes: static segments,
 * `:name` for exactly one segment and a final `*` (or `*name`) for the non-empty rest of
 * the path. Static segments win over parameters, parameters over a rest match, as in
 * Fastify; routes sharing a pattern are told apart by operation.
 */
export interface RoutePattern {
  pattern: string;
  operations: readonly VaultOperation[];
}

interface Compiled<R> {
  route: R;
  /** Parameter name per segment position (undefined for static segments). */
  names: Array<string | undefined>;
  restName: string | undefined;
}

interface Node<R> {
  statics: Map<string, Node<R>>;
  param: Node<R> | undefined;
  rest: Array<Compiled<R>>;
  routes: Array<Compiled<R>>;
}

export interface RouteMatch<R> {
  route: R;
  params: Record<string, string>;
}

export type RouteLookup<R> = { found: RouteMatch<R> } | { found: undefined; pathExists: boolean };

const newNode = <R>(): Node<R> => ({ statics: new Map(), param: undefined, rest: [], routes: [] });

export class RouteTable<R extends RoutePattern> {
  private readonly root: Node<R> = newNode();
  private readonly added: R[] = [];

  /** Every route added so far, in order (for checks that walk the whole table). */
  routes(): readonly R[] {
    return [...this.added];
  }

  add(route: R): void {
    this.added.push(route);
    const segments = route.pattern.replace(/^\/+/, '').split('/');
    const names: Array<string | undefined> = [];
    let node = this.root;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i] as string;
      if (seg.startsWith('*')) {
        if (i !== segments.length - 1) throw new Error(`route pattern ${route.pattern}: * must be the last segment`);
        node.rest.push({ route, names, restName: seg.length > 1 ? seg.slice(1) : '*' });
        return;
      }
      if (seg.startsWith(':')) {
        names.push(seg.slice(1));
        node.param ??= newNode();
        node = node.param;
      } else {
        names.push(undefined);
        let next = node.statics.get(seg);
        if (!next) {
          next = newNode();
          node.statics.set(seg, next);
        }
        node = next;
      }
    }
    node.routes.push({ route, names, restName: undefined });
  }

  addAll(routes: Iterable<R>): void {
    for (const r of routes) this.add(r);
  }

  /** Finds the best route serving `operation` on `path` (no leading or trailing slash). */
  lookup(path: string, operation: VaultOperation): RouteLookup<R> {
    const segments = path === '' ? [''] : path.split('/');
    let pathExists = false;
    const visit = (node: Node<R>, i: number): RouteMatch<R> | undefined => {
      if (i === segments.length) {
        if (node.routes.length > 0) pathExists = true;
        const hit = node.routes.find((c) => c.route.operations.includes(operation));
        return hit ? build(hit, segments, undefined) : undefined;
      }
      const seg = segments[i] as string;
      const stat = node.statics.get(seg);
      if (stat) {
        const m = visit(stat, i + 1);
        if (m) return m;
      }
      if (node.param && seg !== '') {
        const m = visit(node.param, i + 1);
        if (m) return m;
      }
      if (node.rest.length > 0) {
        const rest = segments.slice(i).join('/');
        if (rest !== '') {
          pathExists = true;
          const hit = node.rest.find((c) => c.route.operations.includes(operation));
          if (hit) return build(hit, segments, rest);
        }
      }
      return undefined;
    };
    const found = visit(this.root, 0);
    return found ? { found } : { found: undefined, pathExists };
  }
}

function build<R>(c: Compiled<R>, segments: readonly string[], rest: string | undefined): RouteMatch<R> {
  const params: Record<string, string> = {};
  c.names.forEach((name, i) => {
    if (name !== undefined) params[name] = segments[i] as string;
  });
  if (c.restName !== undefined && rest !== undefined) params[c.restName] = rest;
  return { route: c.route, params };
}
