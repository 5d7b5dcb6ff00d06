import { useState } from 'preact/hooks';
import { enc, vault } from '../api';
import { Section, fmtDate, fromNow, useLoad } from '../ui';
import { mountHref } from './pki-mounts';

export interface SearchHit {
  serial_number: string;
  common_name: string;
  names: string[];
  issuer_id: string;
  role: string;
  not_after: number;
  revoked: boolean;
}

export async function searchCerts(
  mount: string,
  q: Record<string, string>,
): Promise<{ certificates: SearchHit[]; next: string }> {
  const params = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== ''));
  const r = await vault('GET', `${mount}/certs/search?${params.toString()}`);
  return r.data;
}

export function CertTable({ mount, hits, showMount }: { mount: string; hits: SearchHit[]; showMount?: boolean }) {
  return (
    <div class="scroll">
      <table>
        <caption class="sr-only">Certificates</caption>
        <thead>
          <tr>
            {showMount ? <th scope="col">Mount</th> : null}
            <th scope="col">Common name</th>
            <th scope="col">Serial</th>
            <th scope="col">Other names</th>
            <th scope="col">Role</th>
            <th scope="col">Expires</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {hits.map((h) => (
            <tr key={h.serial_number}>
              {showMount ? <td>{mount}</td> : null}
              <td>
                <a href={mountHref(mount, `/certs/${enc(h.serial_number)}`)}>{h.common_name || '(no common name)'}</a>
              </td>
              <td>
                <code class="serial">{h.serial_number}</code>
              </td>
              <td>{h.names.filter((n) => n !== h.common_name.toLowerCase()).join(', ') || '—'}</td>
              <td>{h.role || '—'}</td>
              <td>
                {fmtDate(h.not_after)} <span class="muted">({fromNow(new Date(h.not_after * 1000))})</span>
              </td>
              <td>{h.revoked ? <span class="tag danger">revoked</span> : 'valid'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const EMPTY = { name: '', serial: '', issuer: '', role: '', days: '', revoked: '', sort: 'not_after', order: 'asc' };

/** The certificate inventory of a mount: certs/search with every filter, keyset pages. */
export function CertInventory({ mount }: { mount: string }) {
  const [form, setForm] = useState(EMPTY);
  const [query, setQuery] = useState(EMPTY);
  const [cursors, setCursors] = useState<string[]>(['']);
  const after = cursors[cursors.length - 1] ?? '';
  const load = useLoad(
    () =>
      searchCerts(mount, {
        name: query.name,
        serial: query.serial,
        issuer: query.issuer,
        role: query.role,
        expiring_within: query.days ? `${Number(query.days) * 24}h` : '',
        revoked: query.revoked,
        sort: query.sort,
        order: query.order,
        limit: '25',
        after,
      }),
    [mount, query, after],
  );
  const field = (k: keyof typeof EMPTY, label: string, type = 'text') => (
    <span>
      <label for={`q-${k}`}>{label}</label>
      <input
        id={`q-${k}`}
        type={type}
        value={form[k]}
        onInput={(e) => setForm({ ...form, [k]: e.currentTarget.value })}
      />
    </span>
  );
  return (
    <>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery(form);
          setCursors(['']);
        }}
      >
        {field('name', 'Name contains')}
        {field('serial', 'Serial starts with')}
        {field('issuer', 'Issuer')}
        {field('role', 'Role')}
        {field('days', 'Expiring within (days)', 'number')}
        <span>
          <label for="q-revoked">Revoked</label>
          <select
            id="q-revoked"
            value={form.revoked}
            onChange={(e) => setForm({ ...form, revoked: e.currentTarget.value })}
          >
            <option value="">Either</option>
            <option value="false">Not revoked</option>
            <option value="true">Revoked</option>
          </select>
        </span>
        <span>
          <label for="q-sort">Sort</label>
          <select
            id="q-sort"
            value={`${form.sort}:${form.order}`}
            onChange={(e) => {
              const [sort, order] = e.currentTarget.value.split(':');
              setForm({ ...form, sort: sort!, order: order! });
            }}
          >
            <option value="not_after:asc">Expiry, soonest first</option>
            <option value="not_after:desc">Expiry, latest first</option>
            <option value="serial:asc">Serial</option>
          </select>
        </span>
        <button type="submit" class="primary">
          Search
        </button>
      </form>
      <Section load={load} what="certificates">
        {(page) => (
          <>
            {page.certificates.length === 0 ? (
              <p role="status">No certificate matches.</p>
            ) : (
              <CertTable mount={mount} hits={page.certificates} />
            )}
            <nav class="pager" aria-label="Certificate pages">
              <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors(cursors.slice(0, -1))}>
                ← Previous
              </button>
              <span>Page {cursors.length}</span>
              <button type="button" disabled={!page.next} onClick={() => setCursors([...cursors, page.next])}>
                Next →
              </button>
            </nav>
          </>
        )}
      </Section>
    </>
  );
}
