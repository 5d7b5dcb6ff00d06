/**
 * The few Reflect metadata functions that @peculiar/x509's dependency injection container
 * (tsyringe) checks for at load time. Import this module before `@peculiar/x509`.
 * A tiny local version avoids a polyfill dependency for a handful of lookups on the rare paths.
 */
type Target = object;
const store = new WeakMap<Target, Map<string | symbol | undefined, Map<unknown, unknown>>>();

function table(
  target: Target,
  property: string | symbol | undefined,
  create: boolean,
): Map<unknown, unknown> | undefined {
  let byProp = store.get(target);
  if (!byProp) {
    if (!create) return undefined;
    byProp = new Map();
    store.set(target, byProp);
  }
  let t = byProp.get(property);
  if (!t && create) {
    t = new Map();
    byProp.set(property, t);
  }
  return t;
}

function getOwnMetadata(key: unknown, target: Target, property?: string | symbol): unknown {
  return table(target, property, false)?.get(key);
}

function getMetadata(key: unknown, target: Target, property?: string | symbol): unknown {
  for (let t: Target | null = target; t; t = Object.getPrototypeOf(t) as Target | null) {
    const m = table(t, property, false);
    if (m?.has(key)) return m.get(key);
  }
  return undefined;
}

function defineMetadata(key: unknown, value: unknown, target: Target, property?: string | symbol): void {
  table(target, property, true)!.set(key, value);
}

function metadata(key: unknown, value: unknown) {
  return (target: Target, property?: string | symbol): void => defineMetadata(key, value, target, property);
}

const R = Reflect as unknown as Record<string, unknown>;
if (typeof R.getMetadata !== 'function') {
  Object.assign(R, {
    getMetadata,
    getOwnMetadata,
    defineMetadata,
    metadata,
    hasMetadata: (k: unknown, t: Target, p?: string | symbol) => getMetadata(k, t, p) !== undefined,
    hasOwnMetadata: (k: unknown, t: Target, p?: string | symbol) => getOwnMetadata(k, t, p) !== undefined,
  });
}

export {};
