import pg from 'pg';

/** The channel the change triggers notify (migration 0036); the payload is the writing node's id. */
export const CHANGE_CHANNEL = 'strongroom_changes';
const RECONNECT_MS = 1000;

/**
 * PostgreSQL's answer to SQLite's `data_version` (Db.externalChanges): a number that moves when another node
 * (another process on the same database) commits a change to the tables in-process caches hold. Triggers notify
 * CHANGE_CHANNEL with the id of the node that wrote, set on each of its connections as `strongroom.node`; this
 * node listens on one connection of its own and counts the notifications of the others. While that connection is
 * down the number moves on every look, so a cache keeps nothing longer than its check interval until it is back.
 */
export class PgChangeFeed {
  #version = 0;
  #listening = false;
  #client: pg.Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #started = false;

  constructor(
    private readonly url: string,
    readonly nodeId: string,
  ) {}

  /**
   * Moves whenever another node committed a change since the last look (or when that cannot be known). The first
   * look starts listening, so a process without caches (the CLI's commands) never opens the connection.
   */
  version(): number {
    if (!this.#started) {
      this.#started = true;
      void this.#connect();
    }
    return this.#listening ? this.#version : ++this.#version;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    const c = this.#client;
    this.#client = undefined;
    this.#listening = false;
    await c?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.url, application_name: 'strongroom-changes' });
    this.#client = client;
    const lost = () => {
      if (this.#client !== client) return;
      this.#listening = false;
      this.#client = undefined;
      void client.end().catch(() => undefined);
      if (!this.#closed) {
        this.#timer = setTimeout(() => void this.#connect(), RECONNECT_MS);
        this.#timer.unref();
      }
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (n) => {
      if (n.channel === CHANGE_CHANNEL && n.payload !== this.nodeId) this.#version++;
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
      if (this.#client !== client) return;
      // Whatever happened while nobody listened counts as a change.
      this.#version++;
      this.#listening = true;
    } catch {
      lost();
    }
  }
}
