import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { V4StateGenerator, writeV4State } from '../generators/tfstate.js';
import { md5Hex } from './tfe.js';

export const BENCH_LINEAGE = '5f0c2a1e-0b7d-4c3e-9a61-7d2e8b4f1c90';
const SERIAL_MARK = 987654321;

/** Generated states are kept between runs: the 200 MB one takes a while to write. */
const CACHE_DIR = fileURLToPath(new URL('../../../bench/.work/states/', import.meta.url));

/** Instances for a state of about `bytes`: a realistic density of roughly 2 KB per instance. */
/** About one resource instance per kilobyte: a 200 MB state holds ~200,000 instances, as the target states. */
export function instancesFor(bytes: number): number {
  return Math.max(4, Math.round(bytes / 1000));
}

/** A v4 state of about `bytes` whose serial can be changed per request without regenerating it. */
export class StateTemplate {
  private readonly head: string;
  private readonly tail: string;

  constructor(bytes: number, seed = 7) {
    const gen = new V4StateGenerator({
      resourceInstances: instancesFor(bytes),
      targetBytes: bytes,
      serial: SERIAL_MARK,
      lineage: BENCH_LINEAGE,
      seed,
    });
    const text = [...gen.chunks()].join('');
    const mark = `"serial": ${SERIAL_MARK}`;
    const at = text.indexOf(mark);
    if (at < 0) throw new Error('generated state has no serial field');
    this.head = text.slice(0, at + '"serial": '.length);
    this.tail = text.slice(at + mark.length);
  }

  withSerial(serial: number): { bytes: Buffer; md5: string } {
    const bytes = Buffer.from(`${this.head}${serial}${this.tail}`);
    return { bytes, md5: md5Hex(bytes) };
  }
}

export interface StateFile {
  path: string;
  bytes: number;
  md5: string;
  serial: number;
  instances: number;
}

/** A cached state file of about `bytes` with serial 1, generated on first use. */
export async function stateFile(bytes: number): Promise<StateFile> {
  mkdirSync(CACHE_DIR, { recursive: true });
  const instances = instancesFor(bytes);
  const path = join(CACHE_DIR, `v4-${bytes}-${instances}.tfstate`);
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp`;
    await writeV4State(tmp, {
      resourceInstances: instances,
      targetBytes: bytes,
      serial: 1,
      lineage: BENCH_LINEAGE,
      seed: 11,
    });
    renameSync(tmp, path);
  }
  const data = readFileSync(path);
  return { path, bytes: statSync(path).size, md5: md5Hex(data), serial: 1, instances };
}

/**
 * Copies of a state file that differ only in their serial, so that every upload stores new
 * content (a content-addressed store would otherwise find the bytes already there).
 */
export class StateVariants {
  private readonly head: Buffer;
  private readonly tail: Buffer;

  constructor(
    readonly file: StateFile,
    readonly original: Buffer,
  ) {
    const mark = Buffer.from(`"serial": ${file.serial},`);
    const at = original.indexOf(mark);
    if (at < 0) throw new Error(`${file.path} has no serial field`);
    this.head = original.subarray(0, at + '"serial": '.length);
    this.tail = original.subarray(at + mark.length - 1);
  }

  variant(serial: number): { bytes: Buffer; md5: string; serial: number } {
    const bytes = Buffer.concat([this.head, Buffer.from(String(serial)), this.tail]);
    return { bytes, md5: md5Hex(bytes), serial };
  }
}
