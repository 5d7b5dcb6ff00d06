import { JsonScanner } from './json-scanner.js';
import type { JsonEvents } from './json-scanner.js';

/**
 * OpenTofu's client-side state encryption uploads an envelope instead of a state:
 * `{"meta":{…},"encrypted_data":"<base64>","encryption_version":"v0"}`
 * (reference 3.7). The server cannot read it and must store it all the same.
 */

class TopLevelKeys implements JsonEvents {
  scanner!: JsonScanner;
  readonly keys = new Set<string>();
  private depth = 0;
  rootIsObject = false;

  startObject(): void {
    if (this.depth === 0) this.rootIsObject = true;
    this.depth++;
  }
  endObject(): void {
    this.depth--;
  }
  startArray(): void {
    this.depth++;
  }
  endArray(): void {
    this.depth--;
  }
  scalar(): void {}
  key(name: string): void {
    this.keys.add(name);
    this.scanner.skipValue();
  }
}

/** True when the content is a well-formed JSON object with the envelope's keys and no state `version`. */
export async function isEncryptedStateEnvelope(source: AsyncIterable<Uint8Array>): Promise<boolean> {
  const events = new TopLevelKeys();
  const scanner = new JsonScanner(events);
  events.scanner = scanner;
  try {
    for await (const chunk of source) scanner.write(chunk);
    scanner.end();
  } catch {
    return false;
  }
  const k = events.keys;
  return events.rootIsObject && k.has('encrypted_data') && k.has('encryption_version') && !k.has('version');
}
