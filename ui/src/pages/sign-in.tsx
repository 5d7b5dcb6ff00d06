import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, tfe, vault } from '../api';
import { setSession } from '../session';
import type { Session } from '../session';
import { ErrorBox, Title } from '../ui';

/** Which halves a token opens: the state API (account details) and the Vault API (lookup-self). */
async function probe(token: string): Promise<{ tfe?: string; vault?: string; user?: string }> {
  const out: { tfe?: string; vault?: string; user?: string } = {};
  const quiet = (err: unknown) => {
    if (err instanceof ApiError && err.status === 0) throw err;
    return undefined;
  };
  const [account, lookup] = await Promise.all([
    tfe('GET', '/account/details', undefined, token).catch(quiet),
    vault('GET', 'auth/token/lookup-self', undefined, token).catch(quiet),
  ]);
  if (account) {
    out.tfe = token;
    out.user = account.data?.attributes?.username ?? undefined;
  }
  if (lookup) {
    out.vault = token;
    out.user ??= lookup.data?.display_name ?? undefined;
  }
  return out;
}

export function SignIn() {
  const { query, route } = useLocation();
  const [token, setToken] = useState('');
  const [second, setSecond] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s: Session = {};
      for (const t of [token.trim(), second.trim()].filter(Boolean)) {
        const p = await probe(t);
        s.tfe ??= p.tfe;
        s.vault ??= p.vault;
        s.user ??= p.user;
      }
      if (!s.tfe && !s.vault) {
        setError('Neither the state API nor the certificate API accepted this token. Check it and try again.');
        return;
      }
      setSession(s);
      const next = query.next && query.next.startsWith('/ui/') ? query.next : '/ui/';
      route(next, true);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="narrow">
      <Title>Sign in</Title>
      <p>
        Paste a token: the admin token, a user or team token for the state API, or a Vault token for certificates. It is
        kept in this browser tab only, until you sign out or close it.
      </p>
      <form onSubmit={submit}>
        <label for="token">Token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          required
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <label for="token2">
          Second token (optional: a Vault token when the first is a state token, or the reverse)
        </label>
        <input
          id="token2"
          name="token2"
          type="password"
          autocomplete="off"
          value={second}
          onInput={(e) => setSecond(e.currentTarget.value)}
        />
        <ErrorBox error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </section>
  );
}
