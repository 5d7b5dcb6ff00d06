import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { ApiError, enc, vault } from '../api';
import { ErrorBox, Loading, Section, Title, fmtDate, useLoad } from '../ui';
import { decodeCertificate } from '../x509';
import { CertInventory } from './pki-certs';

/** Mount paths may hold slashes ("pki/int"); in UI paths they travel encoded as one segment. */
export const mountHref = (mount: string, rest = '') => `/ui/pki/${enc(mount)}${rest}`;

export async function pkiMounts(): Promise<string[]> {
  const r = await vault('GET', 'sys/mounts');
  const data = (r.data ?? r) as Record<string, { type: string }>;
  return Object.entries(data)
    .filter(([, m]) => m && m.type === 'pki')
    .map(([p]) => p.replace(/\/$/, ''))
    .sort();
}

export function Mounts() {
  const { route } = useLocation();
  const load = useLoad(pkiMounts, []);
  const [path, setPath] = useState('');
  return (
    <section>
      <Title>PKI mounts</Title>
      {load.error && load.error.startsWith('Permission denied') ? (
        <p>This token may not list mounts. Open a mount by its path instead.</p>
      ) : (
        <ErrorBox error={load.error} />
      )}
      {load.loading ? <Loading what="mounts" /> : null}
      {load.data ? (
        load.data.length === 0 ? (
          <p>No PKI mount is enabled.</p>
        ) : (
          <ul class="list">
            {load.data.map((m) => (
              <li key={m}>
                <a href={mountHref(m)}>{m}</a>
              </li>
            ))}
          </ul>
        )
      ) : null}
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          if (path.trim()) route(mountHref(path.trim().replace(/^\/+|\/+$/g, '')));
        }}
      >
        <label for="mount-path">Open a mount by path</label>
        <input id="mount-path" value={path} onInput={(e) => setPath(e.currentTarget.value)} placeholder="pki" />
        <button type="submit">Open</button>
      </form>
    </section>
  );
}

const TABS = [
  ['certs', 'Certificates'],
  ['issuers', 'Issuers'],
  ['keys', 'Keys'],
  ['roles', 'Roles'],
] as const;

export function Mount() {
  const { params } = useRoute();
  const { query } = useLocation();
  const mount = params.mount ?? '';
  const tab = query.tab ?? 'certs';
  return (
    <section>
      <p class="crumbs">
        <a href="/ui/pki">PKI mounts</a> / {mount}
      </p>
      <Title>{`Mount ${mount}`}</Title>
      <nav class="tabs" aria-label="Mount sections">
        {TABS.map(([k, label]) => (
          <a key={k} href={mountHref(mount, `?tab=${k}`)} aria-current={tab === k ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {tab === 'issuers' ? <Issuers mount={mount} /> : null}
      {tab === 'keys' ? <Keys mount={mount} /> : null}
      {tab === 'roles' ? <Roles mount={mount} /> : null}
      {tab === 'certs' ? <CertInventory mount={mount} /> : null}
    </section>
  );
}

async function listOrEmpty(path: string): Promise<{ keys: string[]; key_info: Record<string, any> }> {
  try {
    const r = await vault('GET', `${path}?list=true`);
    return { keys: r.data?.keys ?? [], key_info: r.data?.key_info ?? {} };
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return { keys: [], key_info: {} };
    throw err;
  }
}

function Issuers({ mount }: { mount: string }) {
  const load = useLoad(async () => {
    const list = await listOrEmpty(`${mount}/issuers`);
    const def = await vault('GET', `${mount}/config/issuers`).catch(() => undefined);
    const details = await Promise.all(list.keys.map((id) => vault('GET', `${mount}/issuer/${enc(id)}`)));
    return { def: def?.data?.default as string | undefined, details: details.map((d) => d.data) };
  }, [mount]);
  return (
    <Section load={load} what="issuers">
      {({ def, details }) =>
        details.length === 0 ? (
          <p>This mount has no issuer yet.</p>
        ) : (
          <div class="scroll">
            <table>
              <caption class="sr-only">Issuers</caption>
              <thead>
                <tr>
                  <th scope="col">Issuer</th>
                  <th scope="col">Subject</th>
                  <th scope="col">Key</th>
                  <th scope="col">Valid</th>
                  <th scope="col">Chain</th>
                  <th scope="col">Links</th>
                </tr>
              </thead>
              <tbody>
                {details.map((d: any) => {
                  const c = decodeCertificate(d.certificate);
                  return (
                    <tr key={d.issuer_id}>
                      <td>
                        {d.issuer_name || d.issuer_id}
                        {d.issuer_id === def ? <span class="tag">default</span> : null}
                        <div class="muted small">{d.issuer_id}</div>
                      </td>
                      <td>{c.subject}</td>
                      <td>{c.key}</td>
                      <td>
                        {fmtDate(c.notBefore)} → {fmtDate(c.notAfter)}
                      </td>
                      <td>{(d.ca_chain ?? []).length} certificate(s)</td>
                      <td>
                        <a href={`/v1/${mount}/issuer/${enc(d.issuer_id)}/pem`}>PEM</a>{' '}
                        <a href={`/v1/${mount}/issuer/${enc(d.issuer_id)}/crl/pem`}>CRL</a>{' '}
                        <span title="OCSP responder (POST or GET)">OCSP: /v1/{mount}/ocsp</span>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )
      }
    </Section>
  );
}

function Keys({ mount }: { mount: string }) {
  const load = useLoad(() => listOrEmpty(`${mount}/keys`), [mount]);
  return (
    <Section load={load} what="keys">
      {(list) =>
        list.keys.length === 0 ? (
          <p>This mount has no key yet.</p>
        ) : (
          <table>
            <caption class="sr-only">Keys</caption>
            <thead>
              <tr>
                <th scope="col">Key id</th>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
              </tr>
            </thead>
            <tbody>
              {list.keys.map((k) => (
                <tr key={k}>
                  <td>
                    <code>{k}</code>
                  </td>
                  <td>{list.key_info[k]?.key_name || '—'}</td>
                  <td>{list.key_info[k]?.key_type ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      }
    </Section>
  );
}

function Roles({ mount }: { mount: string }) {
  const load = useLoad(() => listOrEmpty(`${mount}/roles`), [mount]);
  return (
    <>
      <p>
        <a class="button" href={mountHref(mount, '/roles/_new')}>
          New role
        </a>
      </p>
      <Section load={load} what="roles">
        {(list) =>
          list.keys.length === 0 ? (
            <p>No role yet.</p>
          ) : (
            <ul class="list">
              {list.keys.map((r) => (
                <li key={r}>
                  <a href={mountHref(mount, `/roles/${enc(r)}`)}>{r}</a>
                </li>
              ))}
            </ul>
          )
        }
      </Section>
    </>
  );
}
