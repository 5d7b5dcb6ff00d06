import { useState } from 'preact/hooks';
import { ApiError } from '../api';
import { ErrorBox, Section, Title, useLoad } from '../ui';
import { CertTable, searchCerts } from './pki-certs';
import type { SearchHit } from './pki-certs';
import { pkiMounts } from './pki-mounts';

/** Certificates not revoked that expire within N days, on every PKI mount this token may search. */
export function Expiring() {
  const [days, setDays] = useState('30');
  const [within, setWithin] = useState(30);
  const load = useLoad(async () => {
    const mounts = await pkiMounts();
    return Promise.all(
      mounts.map(async (m) => {
        try {
          const r = await searchCerts(m, { expiring_within: `${within * 24}h`, revoked: 'false', limit: '100' });
          return { mount: m, hits: r.certificates, more: r.next !== '', error: undefined as string | undefined };
        } catch (err) {
          const denied = err instanceof ApiError && err.status === 403;
          return { mount: m, hits: [] as SearchHit[], more: false, error: denied ? undefined : (err as Error).message };
        }
      }),
    );
  }, [within]);
  return (
    <section>
      <Title>Expiring soon</Title>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          setWithin(Math.max(1, Number(days) || 30));
        }}
      >
        <label for="days">Within (days)</label>
        <input id="days" type="number" min="1" value={days} onInput={(e) => setDays(e.currentTarget.value)} />
        <button type="submit">Show</button>
      </form>
      <Section load={load} what="certificates">
        {(results) => {
          const any = results.some((r) => r.hits.length > 0);
          return (
            <>
              {!any ? (
                <p role="status">No certificate expires in the next {within} days on the mounts you can read.</p>
              ) : null}
              {results.map((r) => (
                <div key={r.mount}>
                  <ErrorBox error={r.error && `${r.mount}: ${r.error}`} />
                  {r.hits.length > 0 ? (
                    <>
                      <h2>{r.mount}</h2>
                      <CertTable mount={r.mount} hits={r.hits} />
                      {r.more ? <p class="hint">More on the mount's certificate page.</p> : null}
                    </>
                  ) : null}
                </div>
              ))}
            </>
          );
        }}
      </Section>
    </section>
  );
}
