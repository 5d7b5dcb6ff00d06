import type { StateVersionOutput, StateVersionStatus } from '../state-versions/state-version.js';

/**
 * Outputs of state versions as the outputs API shows them (reference 6.1, 6.2;
 * https://developer.hashicorp.com/terraform/cloud-docs/api-docs/state-version-outputs).
 */
export type { StateVersionOutput, StateVersionStatus };
/** Output reads fail as the state download does once the backing data is deleted. */
export { assertBackingDataNotDeleted } from '../state-versions/state-version.js';

/** Where an output is read from: the redaction rule differs per endpoint (reference 6.2). */
export type OutputView = 'show' | 'version-list' | 'current';

/**
 * HCP hides sensitive values on `current-state-version-outputs` only: that endpoint is
 * meant for callers who may read outputs but not whole states. A single output
 * (`GET /state-version-outputs/:id`) and a version's output list carry the value, since
 * reading them needs full state read access anyway.
 */
export function presentOutput(o: StateVersionOutput, view: OutputView): StateVersionOutput {
  if (view === 'current' && o.sensitive) return { ...o, value: null };
  return o;
}
