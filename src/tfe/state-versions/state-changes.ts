/** Told which workspaces' versions, outputs or head a write touched (before its commit, and again once committed). */
export type StateChangeListener = (workspaceIds: readonly string[]) => void;

/**
 * The writes of the state repositories (versions and heads, outputs) report the workspaces
 * they touched here, so in-process caches of what those tables hold cannot miss a write
 * made through them. The call comes before the commit, so that no answer read after the
 * commit is kept from before it; a unit of work run through `reportingAfter` (every unit of
 * StateRepos) calls the listeners again once it has ended, for what a reader on another
 * connection (PostgreSQL's pool) read between the first call and the commit, and kept
 * (RecentCache refuses only values read before a call).
 */
export class StateChanges {
  readonly #listeners: StateChangeListener[] = [];
  /**
   * The changes reported while units run through `reportingAfter` were running; `#logStart` numbers the first. Only
   * what a running unit may still report again is kept: under a steady load some unit is always running, so the log
   * is cut at the oldest running unit's start rather than only when none runs.
   */
  #log: Array<readonly string[]> = [];
  #logStart = 0;
  /** Log positions where running units started, oldest first (positions only grow), with how many started there. */
  readonly #running = new Map<number, number>();

  onChange(listener: StateChangeListener): void {
    this.#listeners.push(listener);
  }

  changed(workspaceIds: readonly string[]): void {
    if (workspaceIds.length === 0) return;
    for (const l of this.#listeners) l(workspaceIds);
    if (this.#running.size > 0) this.#log.push(workspaceIds);
  }

  /** Runs a unit of work; the workspaces reported while it ran are reported again once it has ended. */
  async reportingAfter<T>(run: () => Promise<T>): Promise<T> {
    const from = this.#logStart + this.#log.length;
    this.#running.set(from, (this.#running.get(from) ?? 0) + 1);
    try {
      return await run();
    } finally {
      const touched = new Set<string>();
      for (let i = from - this.#logStart; i < this.#log.length; i++) for (const id of this.#log[i]!) touched.add(id);
      this.#release(from);
      if (touched.size > 0) for (const l of this.#listeners) l([...touched]);
    }
  }

  /** How many reported changes are kept for running units (what the cut above bounds). */
  get logLength(): number {
    return this.#log.length;
  }

  #release(from: number): void {
    const left = this.#running.get(from)! - 1;
    if (left > 0) this.#running.set(from, left);
    else this.#running.delete(from);
    // The first key is the oldest running unit's start: nothing before it can be asked for again.
    const oldest = this.#running.keys().next();
    const keepFrom = oldest.done ? this.#logStart + this.#log.length : oldest.value;
    const drop = keepFrom - this.#logStart;
    // Cut in steps, so that a unit ending does not copy the log each time.
    if (drop > 0 && (drop === this.#log.length || drop >= 256 || drop * 2 >= this.#log.length)) {
      this.#log = this.#log.slice(drop);
      this.#logStart = keepFrom;
    }
  }
}
