/**
 * The tiny HTTP client behind `strongroom token …` and `strongroom policy …`: it talks to
 * a running server's /v1 API the way the vault CLI does, with the address and token from
 * flags or from STRONGROOM_ADDR/STRONGROOM_TOKEN (VAULT_ADDR/VAULT_TOKEN also work).
 */
export interface ClientEnv {
  readonly [name: string]: string | undefined;
}

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  readFile(path: string): Promise<string>;
}

export const DEFAULT_ADDR = 'http://127.0.0.1:8200';

/** Exit codes of the vault CLI: 1 for local mistakes (usage), 2 for errors from the server. */
export const EXIT_USAGE = 1;
export const EXIT_REMOTE = 2;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export interface ApiTarget {
  addr: string;
  token: string;
}

export function resolveTarget(env: ClientEnv, flags: { address?: string; token?: string }): ApiTarget {
  const addr = (flags.address ?? env['STRONGROOM_ADDR'] ?? env['VAULT_ADDR'] ?? DEFAULT_ADDR).replace(/\/+$/, '');
  const token = flags.token ?? env['STRONGROOM_TOKEN'] ?? env['VAULT_TOKEN'] ?? '';
  if (!/^https?:\/\//.test(addr))
    throw new CliError(`invalid address "${addr}": expected http(s)://host:port`, EXIT_USAGE);
  return { addr, token };
}

/** One API call; returns the parsed JSON (undefined for 204) or throws CliError with the server's messages. */
export async function callApi(
  target: ApiTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown> | undefined> {
  const headers: Record<string, string> = { 'x-vault-request': 'true' };
  if (target.token) headers['x-vault-token'] = target.token;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`${target.addr}/v1/${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
    throw new CliError(`cannot reach ${target.addr}: ${cause}`, EXIT_REMOTE);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const errors = (json as { errors?: unknown } | undefined)?.errors;
    const detail =
      Array.isArray(errors) && errors.length > 0
        ? errors.map((e) => `  * ${String(e)}`).join('\n')
        : '  * (no details)';
    throw new CliError(
      `Error making API request.\n\nURL: ${method} ${target.addr}/v1/${path}\nCode: ${res.status}. ` +
        `Errors:\n\n${detail}`,
      EXIT_REMOTE,
    );
  }
  return json as Record<string, unknown> | undefined;
}

/** Vault CLI style key/value table. */
export function formatTable(rows: ReadonlyArray<[string, unknown]>): string {
  const width = Math.max(3, ...rows.map(([k]) => k.length));
  const lines = [`${'Key'.padEnd(width)}    Value`, `${'---'.padEnd(width)}    -----`];
  for (const [k, v] of rows) lines.push(`${k.padEnd(width)}    ${formatValue(v)}`);
  return `${lines.join('\n')}\n`;
}

function formatValue(v: unknown): string {
  if (v === null || v === undefined) return 'n/a';
  if (Array.isArray(v)) return `[${v.map(String).join(' ')}]`;
  if (typeof v === 'object')
    return `map[${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${k}:${String(x)}`)
      .join(' ')}]`;
  return String(v);
}

/** Seconds as the vault CLI prints durations: 768h, 1h30m, 45s. */
export function formatDuration(seconds: number): string {
  if (seconds <= 0) return '∞';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s || (!h && !m) ? `${s}s` : ''}`;
}
