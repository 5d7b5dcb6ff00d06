import { Type } from '@sinclair/typebox';
import { Document, ListDocument, Resource } from '../jsonapi-schemas.js';
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

const StateVersionOutput = Resource(
  'state-version-outputs',
  {
    name: Type.String(),
    sensitive: Type.Boolean(),
    type: Type.String(),
    value: Type.Unknown({ description: 'the value; null for a sensitive output unless asked for' }),
    'detailed-type': Type.Unknown(),
  },
  'StateVersionOutput',
);
export const StateVersionOutputDocument = Document(StateVersionOutput, 'StateVersionOutputDocument');
export const StateVersionOutputListDocument = ListDocument(StateVersionOutput, 'StateVersionOutputListDocument');
