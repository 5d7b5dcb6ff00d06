import type { StateVersionOutput } from './state-version-output.js';

/** `state-version-outputs` resource objects (reference 6.1). */
export function stateVersionOutputResource(o: StateVersionOutput): Record<string, unknown> {
  return {
    id: o.id,
    type: 'state-version-outputs',
    attributes: {
      name: o.name,
      sensitive: o.sensitive,
      type: o.type,
      value: o.value,
      'detailed-type': o.detailedType,
    },
    links: { self: `/api/v2/state-version-outputs/${o.id}` },
  };
}

export function stateVersionOutputDocument(o: StateVersionOutput): Record<string, unknown> {
  return { data: stateVersionOutputResource(o) };
}

/** The un-paged list of `current-state-version-outputs` (HCP sends no pagination there). */
export function currentOutputsDocument(outputs: StateVersionOutput[]): Record<string, unknown> {
  return { data: outputs.map(stateVersionOutputResource) };
}
