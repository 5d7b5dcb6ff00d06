import { useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { enc, tfe } from '../api';
import { Confirm, ErrorBox, Pager, Section, Title, fmtBytes, fmtDate, useAction, useLoad } from '../ui';

const PAGE_SIZE = 20;

export function versionsPath(org: string, name: string, page: number, size = PAGE_SIZE): string {
  return (
    `/state-versions?filter%5Borganization%5D%5Bname%5D=${enc(org)}&filter%5Bworkspace%5D%5Bname%5D=${enc(name)}` +
    `&page%5Bnumber%5D=${page}&page%5Bsize%5D=${size}&include=created_by`
  );
}

export function creatorName(doc: any, v: any): string {
  const ref = v.relationships?.['created-by']?.data;
  if (!ref) return '—';
  const inc = ((doc.included ?? []) as any[]).find((i) => i.type === ref.type && i.id === ref.id);
  return inc?.attributes?.username ?? inc?.attributes?.name ?? ref.id;
}

export function Workspace() {
  const { params } = useRoute();
  const { query, route } = useLocation();
  const id = params.id ?? '';
  const page = Number(query.page ?? 1) || 1;
  const ws = useLoad(async () => {
    const doc = await tfe('GET', `/workspaces/${enc(id)}`);
    const ref = doc.data.relationships?.['locked-by']?.data;
    const holder = ref
      ? await tfe('GET', `/${ref.type === 'teams' ? 'teams' : 'users'}/${enc(ref.id)}`).catch(() => undefined)
      : undefined;
    return { ...doc, holder: holder?.data?.attributes?.username ?? holder?.data?.attributes?.name ?? ref?.id };
  }, [id]);
  const org = ws.data?.data?.relationships?.organization?.data?.id as string | undefined;
  const name = ws.data?.data?.attributes?.name as string | undefined;
  const versions = useLoad(
    async () => (org && name ? tfe('GET', versionsPath(org, name, page)) : undefined),
    [org, name, page],
  );
  const act = useAction();
  const [reason, setReason] = useState('');
  const [picked, setPicked] = useState<string[]>([]);
  const [notice, setNotice] = useState<string | undefined>();

  const lockAction = async (action: 'lock' | 'unlock' | 'force-unlock') => {
    setNotice(undefined);
    const ok = await act.run(() =>
      tfe(
        'POST',
        `/workspaces/${enc(id)}/actions/${action}`,
        action === 'lock' ? { reason: reason || 'Locked from the web UI' } : undefined,
      ),
    );
    if (ok) {
      setNotice(action === 'lock' ? 'Workspace locked.' : 'Workspace unlocked.');
      ws.reload();
    }
  };
  const rollback = async (versionId: string, serial: number) => {
    setNotice(undefined);
    const ok = await act.run(() =>
      tfe('PATCH', `/workspaces/${enc(id)}/state-versions`, {
        data: {
          type: 'state-versions',
          relationships: { 'rollback-state-version': { data: { type: 'state-versions', id: versionId } } },
        },
      }),
    );
    if (ok) {
      setNotice(`Rolled back: a new version now holds the state of serial ${serial}.`);
      ws.reload();
      versions.reload();
    }
  };
  const toggle = (vid: string) =>
    setPicked((p) => (p.includes(vid) ? p.filter((x) => x !== vid) : [...p.slice(-1), vid]));

  return (
    <section>
      <Section load={ws} what="workspace">
        {(doc) => {
          const a = doc.data.attributes;
          return (
            <>
              <p class="crumbs">
                <a href="/ui/orgs">Organizations</a> / <a href={`/ui/orgs/${enc(org ?? '')}`}>{org}</a> / {a.name}
              </p>
              <Title>{a.name}</Title>
              <dl class="facts">
                <dt>Lock</dt>
                <dd data-testid="lock-state">
                  {a.locked
                    ? `Locked by ${doc.holder ?? 'someone'}${a['locked-reason'] ? ` (${a['locked-reason']})` : ''}`
                    : 'Unlocked'}
                </dd>
                <dt>Resources</dt>
                <dd>{a['resource-count'] ?? 0}</dd>
                <dt>Terraform version</dt>
                <dd>{a['terraform-version'] || '—'}</dd>
                <dt>Last change</dt>
                <dd>{fmtDate(a['latest-change-at'] ?? a['updated-at'])}</dd>
              </dl>
              <div class="actions">
                {a.locked ? (
                  <>
                    <button type="button" disabled={act.busy} onClick={() => lockAction('unlock')}>
                      Unlock
                    </button>
                    {a.permissions?.['can-force-unlock'] ? (
                      <Confirm
                        label="Force unlock"
                        question="Force the lock open?"
                        busy={act.busy}
                        danger
                        onConfirm={() => lockAction('force-unlock')}
                      />
                    ) : null}
                  </>
                ) : (
                  <>
                    <label for="lock-reason">Lock reason</label>
                    <input id="lock-reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
                    <button type="button" disabled={act.busy} onClick={() => lockAction('lock')}>
                      Lock
                    </button>
                  </>
                )}
                {act.busy ? <span role="status">Working…</span> : null}
              </div>
            </>
          );
        }}
      </Section>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      <ErrorBox error={act.error} />
      <h2>State versions</h2>
      <p class="hint">
        Tick two versions to compare them. Rolling back needs the workspace locked by you.{' '}
        <button
          type="button"
          disabled={picked.length !== 2}
          onClick={() =>
            route(`/ui/workspaces/${enc(id)}/diff?from=${enc(picked[0] ?? '')}&to=${enc(picked[1] ?? '')}`)
          }
        >
          Compare selected
        </button>{' '}
        <a href={`/ui/workspaces/${enc(id)}/diff`}>Compare any two versions</a>
      </p>
      <Section load={versions} what="state versions">
        {(doc) =>
          doc ? (
            <>
              {doc.data.length === 0 ? <p>This workspace has no state yet.</p> : null}
              <div class="scroll">
                <table>
                  <caption class="sr-only">State versions, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Compare</th>
                      <th scope="col">Serial</th>
                      <th scope="col">Status</th>
                      <th scope="col">Created by</th>
                      <th scope="col">Size</th>
                      <th scope="col">Terraform</th>
                      <th scope="col">When</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {doc.data.map((v: any, i: number) => {
                      const a = v.attributes;
                      return (
                        <tr key={v.id}>
                          <td>
                            <input
                              type="checkbox"
                              aria-label={`Select serial ${a.serial} to compare`}
                              checked={picked.includes(v.id)}
                              onChange={() => toggle(v.id)}
                            />
                          </td>
                          <td>
                            <a href={`/ui/versions/${enc(v.id)}`}>{a.serial}</a>
                          </td>
                          <td>{a.status}</td>
                          <td>{creatorName(doc, v)}</td>
                          <td>{fmtBytes(a.size)}</td>
                          <td>{a['terraform-version'] || '—'}</td>
                          <td>{fmtDate(a['created-at'])}</td>
                          <td>
                            {page === 1 && i === 0 ? (
                              <span class="muted">current</span>
                            ) : (
                              <Confirm
                                label="Roll back"
                                question={`Roll back to serial ${a.serial}?`}
                                busy={act.busy}
                                onConfirm={() => rollback(v.id, a.serial)}
                              />
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
              <Pager
                label="State versions"
                page={page}
                pages={doc.meta?.pagination?.['total-pages'] ?? 1}
                total={doc.meta?.pagination?.['total-count']}
                onPage={(n) => route(`/ui/workspaces/${enc(id)}?page=${n}`)}
              />
            </>
          ) : null
        }
      </Section>
    </section>
  );
}
