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
  /** The changes reported while units run through `reportingAfter` were running; `#logStart` numbers the first. */
  #log: Array<readonly string[]> = [];
  #logStart = 0;
  #open = 0;

  onChange(listener: StateChangeListener): void {
    this.#listeners.push(listener);
  }

  changed(workspaceIds: readonly string[]): void {
    if (workspaceIds.length === 0) return;
    for (const l of this.#listeners) l(workspaceIds);
    if (this.#open > 0) this.#log.push(workspaceIds);
  }

  /** Runs a unit of work; the workspaces reported while it ran are reported again once it has ended. */
  async reportingAfter<T>(run: () => Promise<T>): Promise<T> {
    const from = this.#logStart + this.#log.length;
    this.#open++;
    try {
      return await run();
    } finally {
      this.#open--;
      const touched = new Set(this.#log.slice(from - this.#logStart).flat());
      if (this.#open === 0) {
        this.#logStart += this.#log.length;
        this.#log = [];
      }
      if (touched.size > 0) for (const l of this.#listeners) l([...touched]);
    }
  }
}
