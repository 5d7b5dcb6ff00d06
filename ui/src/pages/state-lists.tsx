import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { enc, tfe } from '../api';
import { Pager, Section, Title, fmtDate, useLoad } from '../ui';

export interface Pagination {
  'current-page': number;
  'total-pages': number;
  'total-count': number;
}

const PAGE_SIZE = 20;

export function Organizations() {
  const { query, route } = useLocation();
  const page = Number(query.page ?? 1) || 1;
  const load = useLoad(() => tfe('GET', `/organizations?page%5Bnumber%5D=${page}&page%5Bsize%5D=${PAGE_SIZE}`), [page]);
  return (
    <section>
      <Title>Organizations</Title>
      <Section load={load} what="organizations">
        {(doc) => (
          <>
            {doc.data.length === 0 ? <p>No organization is visible to this token.</p> : null}
            <table>
              <caption class="sr-only">Organizations</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Email</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {doc.data.map((o: any) => (
                  <tr key={o.id}>
                    <td>
                      <a href={`/ui/orgs/${enc(o.id)}`}>{o.attributes.name}</a>
                    </td>
                    <td>{o.attributes.email}</td>
                    <td>{fmtDate(o.attributes['created-at'])}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager
              label="Organizations"
              page={page}
              pages={doc.meta?.pagination?.['total-pages'] ?? 1}
              total={doc.meta?.pagination?.['total-count']}
              onPage={(n) => route(`/ui/orgs?page=${n}`)}
            />
          </>
        )}
      </Section>
    </section>
  );
}

export function Workspaces() {
  const { params } = useRoute();
  const { query, route } = useLocation();
  const org = params.org ?? '';
  const page = Number(query.page ?? 1) || 1;
  const search = query.q ?? '';
  const [text, setText] = useState(search);
  const load = useLoad(async () => {
    const doc = await tfe(
      'GET',
      `/organizations/${enc(org)}/workspaces?page%5Bnumber%5D=${page}&page%5Bsize%5D=${PAGE_SIZE}` +
        `&include=project${search ? `&search%5Bname%5D=${enc(search)}` : ''}`,
    );
    // The current serial and the lock holder's name, each from its own public read.
    const quiet = () => undefined;
    const holders = new Map<string, Promise<any>>();
    const extra = await Promise.all(
      (doc.data as any[]).map(async (w) => {
        const csv = w.relationships?.['current-state-version']?.data
          ? tfe('GET', `/workspaces/${enc(w.id)}/current-state-version`).catch(quiet)
          : undefined;
        const ref = w.relationships?.['locked-by']?.data;
        if (ref && !holders.has(ref.id))
          holders.set(ref.id, tfe('GET', `/${ref.type === 'teams' ? 'teams' : 'users'}/${enc(ref.id)}`).catch(quiet));
        return { serial: (await csv)?.data?.attributes?.serial as number | undefined };
      }),
    );
    const names = new Map<string, string>();
    for (const [id, p] of holders) {
      const h = await p;
      names.set(id, h?.data?.attributes?.username ?? h?.data?.attributes?.name ?? id);
    }
    return { doc, extra, names };
  }, [org, page, search]);
  const go = (p: number, q: string) => route(`/ui/orgs/${enc(org)}?page=${p}${q ? `&q=${enc(q)}` : ''}`);
  return (
    <section>
      <p class="crumbs">
        <a href="/ui/orgs">Organizations</a> / {org}
      </p>
      <Title>Workspaces of {org}</Title>
      <form
        class="inline"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          go(1, text.trim());
        }}
      >
        <label for="ws-search">Search by name</label>
        <input id="ws-search" type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit">Search</button>
      </form>
      <Section load={load} what="workspaces">
        {({ doc, extra, names }) => {
          const included = (doc.included ?? []) as any[];
          const find = (type: string, id: string | undefined) => included.find((i) => i.type === type && i.id === id);
          return (
            <>
              {doc.data.length === 0 ? <p>No workspace matches.</p> : null}
              <div class="scroll">
                <table>
                  <caption class="sr-only">Workspaces</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Project</th>
                      <th scope="col">Lock</th>
                      <th scope="col">Serial</th>
                      <th scope="col">Resources</th>
                      <th scope="col">Last change</th>
                    </tr>
                  </thead>
                  <tbody>
                    {doc.data.map((w: any, i: number) => {
                      const a = w.attributes;
                      const project = find('projects', w.relationships?.project?.data?.id);
                      const holderRef = w.relationships?.['locked-by']?.data;
                      return (
                        <tr key={w.id}>
                          <td>
                            <a href={`/ui/workspaces/${enc(w.id)}`}>{a.name}</a>
                          </td>
                          <td>{project?.attributes?.name ?? '—'}</td>
                          <td>{a.locked ? `Locked by ${names.get(holderRef?.id) ?? 'someone'}` : 'Unlocked'}</td>
                          <td>{extra[i]?.serial ?? '—'}</td>
                          <td>{a['resource-count'] ?? 0}</td>
                          <td>{fmtDate(a['latest-change-at'] ?? a['updated-at'])}</td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
              <Pager
                label="Workspaces"
                page={page}
                pages={doc.meta?.pagination?.['total-pages'] ?? 1}
                total={doc.meta?.pagination?.['total-count']}
                onPage={(n) => go(n, search)}
              />
            </>
          );
        }}
      </Section>
    </section>
  );
}
