import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { download, enc, tfe } from '../api';
import { Confirm, ErrorBox, Section, Title, fmtBytes, fmtDate, useAction, useLoad } from '../ui';

function OutputValue({ output }: { output: any }) {
  const a = output.attributes;
  const [shown, setShown] = useState<{ value: unknown } | undefined>();
  const act = useAction();
  if (a.sensitive && !shown)
    return (
      <>
        <span class="masked" aria-label="sensitive value hidden">
          ••••••••
        </span>{' '}
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            act.run(async () => {
              const doc = await tfe('GET', `/state-version-outputs/${enc(output.id)}`);
              setShown({ value: doc.data.attributes.value });
            })
          }
        >
          Reveal
        </button>
        <ErrorBox error={act.error} />
      </>
    );
  const value = shown ? shown.value : a.value;
  return <pre class="value">{typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>;
}

export function Version() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const sv = useLoad(() => tfe('GET', `/state-versions/${enc(id)}?include=created_by`), [id]);
  const outputs = useLoad(() => tfe('GET', `/state-versions/${enc(id)}/outputs?page%5Bsize%5D=100`), [id]);
  const [filter, setFilter] = useState({ type: '', module: '', provider: '' });
  const act = useAction();
  const [notice, setNotice] = useState<string | undefined>();
  const backing = async (action: string, done: string) => {
    setNotice(undefined);
    if (await act.run(() => tfe('POST', `/state-versions/${enc(id)}/actions/${action}`))) {
      setNotice(done);
      sv.reload();
    }
  };
  return (
    <section>
      <Section load={sv} what="state version">
        {(doc) => {
          const a = doc.data.attributes;
          const wsId = doc.data.relationships?.workspace?.data?.id as string | undefined;
          const resources = (a.resources ?? []) as {
            name: string;
            type: string;
            count: number;
            module: string;
            provider: string;
          }[];
          const distinct = (k: 'type' | 'module' | 'provider') => [...new Set(resources.map((r) => r[k]))].sort();
          const shown = resources.filter(
            (r) =>
              (!filter.type || r.type === filter.type) &&
              (!filter.module || r.module === filter.module) &&
              (!filter.provider || r.provider === filter.provider),
          );
          return (
            <>
              <p class="crumbs">{wsId ? <a href={`/ui/workspaces/${enc(wsId)}`}>Back to the workspace</a> : null}</p>
              <Title>{`State version ${a.serial}`}</Title>
              <dl class="facts">
                <dt>Status</dt>
                <dd>{a.status}</dd>
                <dt>Created</dt>
                <dd>{fmtDate(a['created-at'])}</dd>
                <dt>Size</dt>
                <dd>{fmtBytes(a.size)}</dd>
                <dt>Terraform version</dt>
                <dd>{a['terraform-version'] || '—'}</dd>
                <dt>Lineage</dt>
                <dd>{a.lineage || '—'}</dd>
              </dl>
              <div class="actions">
                {a['hosted-state-download-url'] ? (
                  <button
                    type="button"
                    onClick={() =>
                      act.run(() => download(a['hosted-state-download-url'], `state-${a.serial}.tfstate`, 'tfe'))
                    }
                  >
                    Download raw state
                  </button>
                ) : null}
                {a['hosted-json-state-download-url'] ? (
                  <button
                    type="button"
                    onClick={() =>
                      act.run(() => download(a['hosted-json-state-download-url'], `state-${a.serial}.json`, 'tfe'))
                    }
                  >
                    Download JSON state
                  </button>
                ) : null}
                {a.status === 'finalized' ? (
                  <Confirm
                    label="Soft-delete backing data"
                    question="Hide this version's state data (it can be restored)?"
                    busy={act.busy}
                    danger
                    onConfirm={() => backing('soft_delete_backing_data', 'Backing data soft-deleted.')}
                  />
                ) : null}
                {a.status === 'backing_data_soft_deleted' ? (
                  <>
                    <button
                      type="button"
                      disabled={act.busy}
                      onClick={() => backing('restore_backing_data', 'Backing data restored.')}
                    >
                      Restore backing data
                    </button>
                    <Confirm
                      label="Delete backing data permanently"
                      question="Delete this version's state data for good?"
                      busy={act.busy}
                      danger
                      onConfirm={() => backing('permanently_delete_backing_data', 'Backing data deleted permanently.')}
                    />
                  </>
                ) : null}
              </div>
              {notice ? (
                <p class="notice" role="status">
                  {notice}
                </p>
              ) : null}
              <ErrorBox error={act.error} />
              <h2>Resources</h2>
              {!a['resources-processed'] ? (
                <p role="status">The resources of this version are still being extracted…</p>
              ) : null}
              <div class="filters">
                {(['type', 'module', 'provider'] as const).map((k) => (
                  <span key={k}>
                    <label for={`f-${k}`}>{k[0]!.toUpperCase() + k.slice(1)}</label>
                    <select
                      id={`f-${k}`}
                      value={filter[k]}
                      onChange={(e) => setFilter({ ...filter, [k]: e.currentTarget.value })}
                    >
                      <option value="">All</option>
                      {distinct(k).map((v) => (
                        <option key={v} value={v}>
                          {v}
                        </option>
                      ))}
                    </select>
                  </span>
                ))}
              </div>
              <div class="scroll">
                <table>
                  <caption class="sr-only">Resources</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Type</th>
                      <th scope="col">Instances</th>
                      <th scope="col">Module</th>
                      <th scope="col">Provider</th>
                    </tr>
                  </thead>
                  <tbody>
                    {shown.map((r, i) => (
                      <tr key={`${r.module}.${r.type}.${r.name}.${i}`}>
                        <td>{r.name}</td>
                        <td>{r.type}</td>
                        <td>{r.count}</td>
                        <td>{r.module}</td>
                        <td>{r.provider}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <p class="hint">
                {shown.length} of {resources.length} resources shown.
              </p>
            </>
          );
        }}
      </Section>
      <h2>Outputs</h2>
      <Section load={outputs} what="outputs">
        {(doc) => (
          <>
            {doc.data.length === 0 ? <p>No outputs.</p> : null}
            <dl class="outputs">
              {doc.data.map((o: any) => (
                <div key={o.id}>
                  <dt>
                    {o.attributes.name}
                    {o.attributes.sensitive ? <span class="tag">sensitive</span> : null}
                  </dt>
                  <dd>
                    <OutputValue output={o} />
                  </dd>
                </div>
              ))}
            </dl>
          </>
        )}
      </Section>
    </section>
  );
}
