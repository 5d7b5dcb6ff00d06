import type { ProcessGroup } from './processes.js';
import type { Strongroom } from './strongroom.js';

/** One measured run against one server. Latencies in milliseconds. */
export interface Measurement {
  reqPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Mean and 99.9th percentile latency (fairness under saturation: how far the tail is from the mean). */
  meanMs?: number;
  p999Ms?: number;
  requests: number;
  failures: number;
  seconds: number;
  /** Set when wrk made the load (--load-generator wrk); autocannon otherwise. */
  loadGenerator?: 'wrk';
  /** The error of the last failed request, when the load generator knows it. */
  lastFailure?: string;
}

/** All rounds of one server in a scenario, with the medians and the memory it used while measured. */
export interface ContenderRow {
  label: string;
  kind: 'strongroom' | 'peer';
  rounds: Measurement[];
  median: Measurement;
  peakRssMb: number | null;
  rssGrowthMb: number | null;
  /** CPU time of the server's process tree per request (all threads), median over rounds. */
  cpuMicrosPerRequest: number | null;
}

export interface Ratio {
  against: string;
  metric: 'req/s' | 'MB/s';
  /** Median over rounds of Strongroom's value divided by the peer's. */
  value: number;
}

export type Verdict = 'met' | 'missed' | 'no target';

export interface ScenarioResult {
  name: string;
  status: 'ok' | 'skipped' | 'failed';
  message?: string;
  rows: ContenderRow[];
  ratios: Ratio[];
  /** Scenario-specific numbers (seconds to processed, keygen rate, CRL build time...). */
  facts: { label: string; value: string }[];
  target: string;
  verdict: Verdict;
  verdictDetail?: string;
  connections: number;
  seconds: number;
  rounds: number;
  elapsedSec: number;
}

export interface RunOptions {
  db: 'sqlite' | 'postgres';
  connections: number | null;
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  smoke: boolean;
  install: boolean;
  postgresUrl: string;
  /** Where the servers under test write V8 CPU profiles (--cpu-prof), or null. */
  cpuProfileDir: string | null;
  /** Cores every server and peer is pinned to (--server-cpus, a taskset list), or null. */
  serverCpus: string | null;
  /** Extra arguments for every Strongroom server started (--server-arg). */
  serverArgs: string[];
  /** What loads the servers where it can (--load-generator). */
  loadGenerator: 'autocannon' | 'wrk';
}

/** What a scenario gets to work with. Everything it starts goes through `group`. */
export interface RunContext {
  opts: RunOptions;
  group: ProcessGroup;
  /** A private scratch directory, removed after the run. */
  tmpDir: string;
  /**
   * The Strongroom server under test, started on first use. `jobWorker: false` keeps background
   * jobs (state extraction) from competing with a throughput measurement.
   */
  strongroom(opts?: { jobWorker?: boolean }): Promise<Strongroom>;
  /** Connections for this scenario: --connections, or the scenario's default. */
  connections: number;
  /** Picks the full-size value, or the tiny one under --smoke. */
  size<T>(full: T, smoke: T): T;
  log(message: string): void;
}

export interface ScenarioOutcome {
  rows: ContenderRow[];
  ratios?: Ratio[];
  facts?: { label: string; value: string }[];
  verdict?: { met: boolean; detail: string } | null;
}

export interface Scenario {
  name: string;
  /** What is measured, in one line. */
  title: string;
  /** The target from the issues, as text for the tables. */
  target: string;
  /** The peer, as text for the tables ("none" when there is none). */
  peer: string;
  defaultConnections: number;
  /** Why the numbers look the way they do; printed under the table in the docs. */
  notes: string;
  run(ctx: RunContext): Promise<ScenarioOutcome>;
}

/** Thrown to skip a scenario (or a peer) cleanly with a message. */
export class Skip extends Error {}

/** The Strongroom feature a scenario needs answers 404: it has not been built yet. */
export class FeatureMissing extends Skip {
  constructor(what: string) {
    super(`skipped: feature not available yet (${what})`);
  }
}
