import { spawn } from 'node:child_process';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Managed {
  name: string;
  child: ChildProcess;
  pid: number;
  /** Last lines of stderr and stdout, for error messages. */
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Every process the harness starts goes through one group, so that an error, Ctrl-C or a
 * normal end stops all of them. Children run in their own process group so that a shell or
 * a forking peer (nginx workers, openssl -multi) goes down with its leader.
 */
export class ProcessGroup {
  private readonly members = new Set<Managed>();

  /** With `cpus` (a taskset list such as `0` or `0-1`), every process of the group runs on those cores only. */
  constructor(private readonly cpus: string | null = null) {}

  start(name: string, command: string, args: string[], options: SpawnOptions = {}): Managed {
    // taskset execs the command: the pid stays the command's.
    const [cmd, argv] = this.cpus ? ['taskset', ['-c', this.cpus, command, ...args]] : [command, args];
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...options });
    if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-4000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', (err) => {
        tail += `\n${err.message}`;
        resolve(null);
      });
    });
    const m: Managed = { name, child, pid: child.pid, output: () => tail.trim(), exited };
    this.members.add(m);
    void exited.then(() => this.members.delete(m));
    return m;
  }

  /** SIGTERM to the child's process group, then SIGKILL after a grace period. */
  async stop(m: Managed, graceMs = 5000): Promise<void> {
    if (m.child.exitCode !== null || m.child.signalCode !== null) {
      this.members.delete(m);
      return;
    }
    signalGroup(m.pid, 'SIGTERM');
    const done = await Promise.race([
      m.exited.then(() => true),
      sleep(graceMs, undefined, { ref: false }).then(() => false),
    ]);
    if (!done) {
      signalGroup(m.pid, 'SIGKILL');
      await Promise.race([m.exited, sleep(2000, undefined, { ref: false })]);
    }
    this.members.delete(m);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.members].map((m) => this.stop(m)));
  }

  /** Last resort on process exit: synchronous SIGKILL to whatever is left. */
  killAllNow(): void {
    for (const m of this.members) signalGroup(m.pid, 'SIGKILL');
    this.members.clear();
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Polls a URL until it answers with one of `okStatuses`, the process dies, or the time runs out. */
export async function waitForHttp(
  url: string,
  m: Managed | null,
  opts: { timeoutMs?: number; okStatuses?: number[]; init?: RequestInit } = {},
): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  const ok = opts.okStatuses ?? [200];
  let last = '';
  while (Date.now() < deadline) {
    if (m && (m.child.exitCode !== null || m.child.signalCode !== null)) {
      throw new Error(`${m.name} exited before it was ready:\n${m.output()}`);
    }
    try {
      const res = await fetch(url, { ...opts.init, signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (ok.includes(res.status)) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(100);
  }
  throw new Error(`${url} not ready in time (${last})${m ? `\n${m.output()}` : ''}`);
}

/** Every pid of a process tree, the root first. */
function treePids(pid: number): number[] {
  const seen = new Set<number>();
  const stack = [pid];
  for (let guard = 0; stack.length > 0 && guard < 1000; guard++) {
    const p = stack.pop() as number;
    if (seen.has(p)) continue;
    seen.add(p);
    stack.push(...childrenOf(p));
  }
  return [...seen];
}

/** Resident memory of a process and all its descendants, in bytes, from /proc. */
export function treeRssBytes(pid: number): number {
  return treePids(pid).reduce((total, p) => total + rssOf(p), 0);
}

/** CPU time (user + system) of a process and all its descendants, in microseconds, from /proc. */
export function treeCpuMicros(pid: number): number {
  let ms = 0;
  for (const p of treePids(pid)) {
    try {
      ms += statCpuMs(`/proc/${p}/stat`);
    } catch {
      // The process is gone.
    }
  }
  return ms * 1000;
}

/** CPU milliseconds (user + system) of one process, all its threads. */
export function processCpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/** CPU milliseconds of one thread of a process (the main thread by default); 0 once it has ended. */
export function threadCpuMs(pid: number, tid: number | string = pid): number {
  try {
    return statCpuMs(`/proc/${pid}/task/${tid}/stat`);
  } catch {
    return 0;
  }
}

/** System-mode CPU milliseconds of one process. */
export function processSysMs(pid: number): number {
  return statFields(`/proc/${pid}/stat`, (f) => (Number(f[12]) * 1000) / CLOCK_TICKS);
}

/** utime + stime of a /proc stat file, in milliseconds. */
function statCpuMs(path: string): number {
  return statFields(path, (f) => ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS);
}

function statFields<T>(path: string, read: (fields: string[]) => T): T {
  // Fields after the command name (which may contain spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(path, 'utf8');
  return read(stat.slice(stat.lastIndexOf(')') + 2).split(' '));
}

/** USER_HZ on Linux, which is what /proc/<pid>/stat counts in. */
const CLOCK_TICKS = 100;

function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Samples a process tree's RSS every `intervalMs` until stopped; reports the baseline and the peak. */
export class RssSampler {
  private timer: NodeJS.Timeout | null = null;
  readonly baseline: number;
  peak: number;

  constructor(
    private readonly pid: number,
    intervalMs = 50,
  ) {
    this.baseline = treeRssBytes(pid);
    this.peak = this.baseline;
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  private sample(): void {
    const v = treeRssBytes(this.pid);
    if (v > this.peak) this.peak = v;
  }

  stop(): { baselineMb: number; peakMb: number; growthMb: number } {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
    const mb = (b: number) => b / (1024 * 1024);
    return {
      baselineMb: mb(this.baseline),
      peakMb: mb(this.peak),
      growthMb: mb(Math.max(0, this.peak - this.baseline)),
    };
  }
}
