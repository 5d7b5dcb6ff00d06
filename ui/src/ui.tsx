import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `fn` when `deps` change; keeps the last data while reloading; errors become text. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    fn().then(
      (data) => live && setState({ data, loading: false }),
      (err: Error) => live && setState({ error: err.message, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload } as Loaded<T>;
}

/** Runs an action with a busy flag and its error as text. */
export function useAction(): {
  busy: boolean;
  error: string | undefined;
  run: (fn: () => Promise<unknown>) => Promise<boolean>;
  clear: () => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const run = async (fn: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      await fn();
      return true;
    } catch (err) {
      setError((err as Error).message);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(undefined) };
}

export function ErrorBox({ error }: { error: string | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

export function Loading({ what }: { what?: string }) {
  return (
    <p class="loading" role="status" aria-live="polite">
      Loading{what ? ` ${what}` : ''}…
    </p>
  );
}

/** Load state of a section: spinner, error, or the content. */
export function Section<T>({
  load,
  what,
  children,
}: {
  load: Loaded<T>;
  what?: string;
  children: (data: T) => ComponentChildren;
}) {
  return (
    <>
      <ErrorBox error={load.error} />
      {load.loading && load.data === undefined ? <Loading what={what} /> : null}
      {load.data !== undefined ? children(load.data) : null}
    </>
  );
}

export function Pager(props: {
  page: number;
  pages: number;
  total?: number;
  onPage: (n: number) => void;
  label: string;
}) {
  const { page, pages, total, onPage, label } = props;
  if (pages <= 1 && total === undefined) return null;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        ← Previous
      </button>
      <span>
        Page {page} of {Math.max(pages, 1)}
        {total !== undefined ? ` (${total.toLocaleString('en')} in all)` : ''}
      </span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next →
      </button>
    </nav>
  );
}

/** A button that asks again before it acts. */
export function Confirm(props: {
  label: string;
  question: string;
  onConfirm: () => void;
  busy?: boolean;
  danger?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class={props.danger ? 'danger' : ''} disabled={props.busy} onClick={() => setAsking(true)}>
        {props.label}…
      </button>
    );
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        class={props.danger ? 'danger' : ''}
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        Yes, {props.label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export function fmtDate(v: string | number | Date | null | undefined): string {
  if (v === null || v === undefined || v === '' || v === 0) return '—';
  const d = typeof v === 'number' ? new Date(v * 1000) : new Date(v);
  if (Number.isNaN(d.getTime())) return String(v);
  return d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, ' UTC');
}

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Relative time until (or since) an instant, in days or hours. */
export function fromNow(d: Date): string {
  const ms = d.getTime() - Date.now();
  const abs = Math.abs(ms);
  const text =
    abs >= 86_400_000 ? `${Math.round(abs / 86_400_000)} days` : `${Math.max(1, Math.round(abs / 3_600_000))} hours`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

export function Title({ children }: { children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${typeof children === 'string' ? children : 'Strongroom'} · Strongroom`;
  }, [children]);
  return <h1 tabIndex={-1}>{children}</h1>;
}
