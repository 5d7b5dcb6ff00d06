import { useEffect, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { enc, vault } from '../api';
import { ErrorBox, Loading, Title, useAction, useLoad } from '../ui';
import { mountHref } from './pki-mounts';

type Kind = 'text' | 'list' | 'bool' | 'select' | 'number';
const FIELDS: [string, string, Kind, string?][] = [
  ['allowed_domains', 'Allowed domains (comma-separated)', 'list'],
  ['allow_subdomains', 'Allow subdomains', 'bool'],
  ['allow_bare_domains', 'Allow bare domains', 'bool'],
  ['allow_glob_domains', 'Allow glob domains', 'bool'],
  ['allow_any_name', 'Allow any name', 'bool'],
  ['allow_localhost', 'Allow localhost', 'bool'],
  ['allow_ip_sans', 'Allow IP SANs', 'bool'],
  ['enforce_hostnames', 'Enforce hostnames', 'bool'],
  ['server_flag', 'Server authentication', 'bool'],
  ['client_flag', 'Client authentication', 'bool'],
  ['no_store', 'Do not store certificates', 'bool'],
  ['key_type', 'Key type', 'select', 'rsa,ec,ed25519,any'],
  ['key_bits', 'Key bits (0 for the default)', 'number'],
  ['ttl', 'TTL (e.g. 72h; empty for the mount default)', 'text'],
  ['max_ttl', 'Maximum TTL', 'text'],
  ['organization', 'Organization (comma-separated)', 'list'],
  ['ou', 'Organizational unit (comma-separated)', 'list'],
];

const NEW = '_new';

export function RoleEdit() {
  const { params } = useRoute();
  const { route } = useLocation();
  const mount = params.mount ?? '';
  const isNew = params.name === NEW;
  const [name, setName] = useState(isNew ? '' : (params.name ?? ''));
  const load = useLoad(
    async () =>
      isNew
        ? { data: { key_type: 'rsa', key_bits: 0, server_flag: true, client_flag: true, enforce_hostnames: true } }
        : vault('GET', `${mount}/roles/${enc(params.name ?? '')}`),
    [mount, params.name],
  );
  const [values, setValues] = useState<Record<string, unknown>>({});
  useEffect(() => {
    if (load.data) setValues(load.data.data ?? {});
  }, [load.data]);
  const act = useAction();
  const [saved, setSaved] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    const body: Record<string, unknown> = {};
    for (const [k, , kind] of FIELDS) {
      const v = values[k];
      if (v === undefined) continue;
      if (kind === 'list')
        body[k] = Array.isArray(v)
          ? v
          : String(v)
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean);
      else if (kind === 'text' && (v === '' || v === 0)) continue;
      else body[k] = v;
    }
    const ok = await act.run(() => vault('POST', `${mount}/roles/${enc(name.trim())}`, body));
    if (ok) {
      setSaved(true);
      if (isNew) route(mountHref(mount, `/roles/${enc(name.trim())}`), true);
      else load.reload();
    }
  };
  const input = ([k, label, kind, options]: (typeof FIELDS)[number]) => {
    const id = `role-${k}`;
    const v = values[k];
    if (kind === 'bool')
      return (
        <div class="check" key={k}>
          <input
            id={id}
            type="checkbox"
            checked={Boolean(v)}
            onChange={(e) => setValues({ ...values, [k]: e.currentTarget.checked })}
          />
          <label for={id}>{label}</label>
        </div>
      );
    if (kind === 'select')
      return (
        <div key={k}>
          <label for={id}>{label}</label>
          <select
            id={id}
            value={String(v ?? '')}
            onChange={(e) => setValues({ ...values, [k]: e.currentTarget.value })}
          >
            {options!.split(',').map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </div>
      );
    const shown = Array.isArray(v) ? v.join(', ') : v === undefined || v === null ? '' : String(v);
    return (
      <div key={k}>
        <label for={id}>{label}</label>
        <input
          id={id}
          type={kind === 'number' ? 'number' : 'text'}
          value={shown}
          onInput={(e) =>
            setValues({ ...values, [k]: kind === 'number' ? Number(e.currentTarget.value) : e.currentTarget.value })
          }
        />
      </div>
    );
  };
  return (
    <section class="narrow">
      <p class="crumbs">
        <a href="/ui/pki">PKI mounts</a> / <a href={mountHref(mount, '?tab=roles')}>{mount}</a> / roles
      </p>
      <Title>{isNew ? 'New role' : `Role ${name}`}</Title>
      <ErrorBox error={load.error} />
      {load.loading && !load.data ? <Loading what="role" /> : null}
      {load.data ? (
        <form onSubmit={save}>
          {isNew ? (
            <div>
              <label for="role-name">Name</label>
              <input id="role-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </div>
          ) : null}
          {FIELDS.map(input)}
          <ErrorBox error={act.error} />
          {saved ? (
            <p class="notice" role="status">
              Role saved.
            </p>
          ) : null}
          <button type="submit" class="primary" disabled={act.busy}>
            {act.busy ? 'Saving…' : isNew ? 'Create role' : 'Save role'}
          </button>
        </form>
      ) : null}
    </section>
  );
}
