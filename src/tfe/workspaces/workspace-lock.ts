/**
 * Pure lock rules (reference 7.4). A lock is held by a user or a team; organization
 * tokens never hold locks. Only the holder may unlock normally; admins force-unlock.
 */
import type { Actor } from '../identity/actor.js';
import { conflict } from '../../shared/errors.js';
import type { DomainError } from '../../shared/errors.js';
import type { LockHolder, Workspace } from './workspace.js';

/** The holder an actor locks as, or null when its kind cannot hold locks. */
export function lockHolderOf(actor: Actor): LockHolder | null {
  switch (actor.kind) {
    case 'user':
      return { kind: 'user', id: actor.userId };
    case 'team':
      return { kind: 'team', id: actor.teamId };
    case 'organization':
      return null;
  }
}

export function isHeldBy(ws: Pick<Workspace, 'lockedBy'>, actor: Actor): boolean {
  const h = lockHolderOf(actor);
  return h !== null && ws.lockedBy !== null && ws.lockedBy.kind === h.kind && ws.lockedBy.id === h.id;
}

/** Why a state write by the actor is refused (a conflict), or null when the actor holds the lock. */
export function lockRefusal(ws: Pick<Workspace, 'lockedBy'>, actor: Actor): DomainError | null {
  if (ws.lockedBy === null)
    return conflict('This workspace is not locked and will only accept state uploads when locked');
  if (!isHeldBy(ws, actor))
    return conflict('This workspace is locked by someone else and will only accept state uploads from the lock holder');
  return null;
}

export type UnlockCheck = 'ok' | 'not-locked' | 'held-by-other';

export function unlockCheck(ws: Pick<Workspace, 'lockedBy'>, actor: Actor): UnlockCheck {
  if (ws.lockedBy === null) return 'not-locked';
  return isHeldBy(ws, actor) ? 'ok' : 'held-by-other';
}

/**
 * The 409 text for an unlock by someone else. Terraform ≥ 1.10 (go-tfe ≥ 1.70) matches
 * "is locked by User" / "is locked by Team" to report who holds the lock.
 */
export function heldByOtherMessage(holder: LockHolder, holderName: string): string {
  const kind = holder.kind === 'user' ? 'User' : 'Team';
  return `Unable to unlock workspace. The workspace is locked by ${kind} ${holderName}.`;
}

/** Clients match this text (reference 1.3) and retry the unlock; it must not be a 409. */
export const PENDING_STATE_VERSION_MESSAGE = 'Unable to unlock workspace: the latest state version is still pending';
