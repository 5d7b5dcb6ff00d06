/**
 * The signed-in tokens, kept in sessionStorage only (this tab, until it closes or the user
 * signs out): never a cookie, so the server never reads them from the browser on its own.
 */
export interface Session {
  /** Token for /api/v2 (admin token or user/team/organization token), when it works there. */
  tfe?: string;
  /** Token for /v1 (admin token or Vault token), when it works there. */
  vault?: string;
  /** Who the state API says this is. */
  user?: string;
}

const KEY = 'strongroom.session';
const listeners = new Set<() => void>();

export function getSession(): Session {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? '{}') as Session;
  } catch {
    return {};
  }
}

export function setSession(s: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(s));
  for (const l of listeners) l();
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
  for (const l of listeners) l();
}

export function onSessionChange(l: () => void): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}
