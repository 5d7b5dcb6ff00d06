import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { enc, tfe } from '../api';
import { Section, Title, useLoad } from '../ui';
import { versionsPath } from './workspace';

export function Diff() {
  const { params } = useRoute();
  const { query, route } = useLocation();
  const id = params.id ?? '';
  const ws = useLoad(() => tfe('GET', `/workspaces/${enc(id)}`), [id]);
  const org = ws.data?.data?.relationships?.organization?.data?.id as string | undefined;
  const name = ws.data?.data?.attributes?.name as string | undefined;
  const versions = useLoad(
    async () => (org && name ? tfe('GET', versionsPath(org, name, 1, 100)) : undefined),
    [org, name],
  );
  const list = ((versions.data?.data ?? []) as any[]).map((v) => ({
    id: v.id as string,
    serial: v.attributes.serial as number,
  }));
  const [from, setFrom] = useState(query.from ?? '');
  const [to, setTo] = useState(query.to ?? '');
  // The older one is "against": the diff tells what changed from it to the newer one.
  const serialOf = (vid: string) => list.find((v) => v.id === vid)?.serial ?? 0;
  const [older, newer] =
    serialOf(query.from ?? '') <= serialOf(query.to ?? '') ? [query.from, query.to] : [query.to, query.from];
  const diff = useLoad(
    async () =>
      older && newer && list.length > 0
        ? tfe('GET', `/state-versions/${enc(newer)}/diff?against=${enc(older)}`)
        : undefined,
    [older, newer, list.length],
  );
  const pick = (label: string, value: string, set: (v: string) => void, idFor: string) => (
    <span>
      <label for={idFor}>{label}</label>
      <select id={idFor} value={value} onChange={(e) => set(e.currentTarget.value)}>
        <option value="">Choose a version</option>
        {list.map((v) => (
          <option key={v.id} value={v.id}>
            Serial {v.serial}
          </option>
        ))}
      </select>
    </span>
  );
  return (
    <section>
      <p class="crumbs">
        <a href={`/ui/workspaces/${enc(id)}`}>Back to {name ?? 'the workspace'}</a>
      </p>
      <Title>{`Compare versions${name ? ` of ${name}` : ''}`}</Title>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          route(`/ui/workspaces/${enc(id)}/diff?from=${enc(from)}&to=${enc(to)}`);
        }}
      >
        {pick('From', from, setFrom, 'diff-from')}
        {pick('To', to, setTo, 'diff-to')}
        <button type="submit" disabled={!from || !to || from === to}>
          Compare
        </button>
      </form>
      <Section load={diff} what="the diff">
        {(doc) => {
          if (!doc) return <p>Choose two different versions.</p>;
          const a = doc.data.attributes;
          const rows = (items: any[], kind: string) =>
            items.map((r: any) => (
              <tr key={`${kind}-${r.address}`} class={kind}>
                <td>{kind}</td>
                <td>
                  <code>{r.address}</code>
                </td>
                <td>{r.type}</td>
                <td>{(r['changed-attributes'] ?? []).join(', ')}</td>
              </tr>
            ));
          const sum = a.summary;
          const summary =
            `From serial ${serialOf(older ?? '')} to serial ${serialOf(newer ?? '')}: ${sum.added} added, ` +
            `${sum.removed} removed, ${sum.changed} changed; outputs ${sum['outputs-added']} added, ` +
            `${sum['outputs-removed']} removed, ${sum['outputs-changed']} changed.`;
          return (
            <>
              <p role="status" data-testid="diff-summary">
                {summary}
              </p>
              <h2>Resources</h2>
              <div class="scroll">
                <table>
                  <caption class="sr-only">Resource changes</caption>
                  <thead>
                    <tr>
                      <th scope="col">Change</th>
                      <th scope="col">Address</th>
                      <th scope="col">Type</th>
                      <th scope="col">Changed attributes</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows(a['resources-added'], 'added')}
                    {rows(a['resources-removed'], 'removed')}
                    {rows(a['resources-changed'], 'changed')}
                  </tbody>
                </table>
              </div>
              <h2>Outputs</h2>
              <ul>
                {a['outputs-added'].map((o: any) => (
                  <li key={`a-${o.name}`}>Added: {o.name}</li>
                ))}
                {a['outputs-removed'].map((o: any) => (
                  <li key={`r-${o.name}`}>Removed: {o.name}</li>
                ))}
                {a['outputs-changed'].map((o: any) => (
                  <li key={`c-${o.name}`}>
                    Changed: {o.name}
                    {o.sensitive ? ' (sensitive)' : ''}
                  </li>
                ))}
              </ul>
            </>
          );
        }}
      </Section>
    </section>
  );
}
