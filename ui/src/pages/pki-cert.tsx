import { useRoute } from 'preact-iso';
import { enc, saveBlob, vault } from '../api';
import { Confirm, ErrorBox, Section, Title, fmtDate, fromNow, useAction, useLoad } from '../ui';
import { decodeCertificate } from '../x509';
import { mountHref } from './pki-mounts';

export function Certificate() {
  const { params } = useRoute();
  const mount = params.mount ?? '';
  const serial = params.serial ?? '';
  const load = useLoad(() => vault('GET', `${mount}/cert/${enc(serial)}`), [mount, serial]);
  const act = useAction();
  return (
    <section>
      <p class="crumbs">
        <a href="/ui/pki">PKI mounts</a> / <a href={mountHref(mount)}>{mount}</a> / certificate
      </p>
      <Section load={load} what="certificate">
        {(r) => {
          const pem = r.data.certificate as string;
          const c = decodeCertificate(pem);
          const revokedAt = Number(r.data.revocation_time ?? 0);
          const cn = /(?:^|, )CN=([^,]*)/.exec(c.subject)?.[1];
          return (
            <>
              <Title>{cn ? cn : `Certificate ${serial}`}</Title>
              <p data-testid="revocation-status" class={revokedAt ? 'error' : 'notice'} role="status">
                {revokedAt
                  ? `Revoked on ${fmtDate(revokedAt)}`
                  : c.notAfter < new Date()
                    ? 'Expired'
                    : 'Valid (not revoked)'}
              </p>
              <dl class="facts">
                <dt>Serial</dt>
                <dd>
                  <code class="serial">{c.serial}</code>
                </dd>
                <dt>Subject</dt>
                <dd>{c.subject || '(empty)'}</dd>
                <dt>Issuer</dt>
                <dd>{c.issuer}</dd>
                <dt>Subject alternative names</dt>
                <dd>{c.sans.length ? c.sans.join(', ') : '—'}</dd>
                <dt>Key</dt>
                <dd>{c.key}</dd>
                <dt>Signature</dt>
                <dd>{c.signature}</dd>
                <dt>Valid from</dt>
                <dd>{fmtDate(c.notBefore)}</dd>
                <dt>Valid until</dt>
                <dd>
                  {fmtDate(c.notAfter)} ({fromNow(c.notAfter)})
                </dd>
              </dl>
              <h2>Extensions</h2>
              <table>
                <caption class="sr-only">Extensions</caption>
                <thead>
                  <tr>
                    <th scope="col">Extension</th>
                    <th scope="col">Critical</th>
                    <th scope="col">Value</th>
                  </tr>
                </thead>
                <tbody>
                  {c.extensions.map((e, i) => (
                    <tr key={i}>
                      <td>{e.name}</td>
                      <td>{e.critical ? 'yes' : 'no'}</td>
                      <td class="wrap">{e.value}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <div class="actions">
                <button
                  type="button"
                  onClick={() =>
                    saveBlob(
                      new Blob([pem], { type: 'application/x-pem-file' }),
                      `${c.serial.replaceAll(':', '-')}.pem`,
                    )
                  }
                >
                  Download PEM
                </button>
                {revokedAt ? null : (
                  <Confirm
                    label="Revoke"
                    question={`Revoke ${cn ?? 'this certificate'}? This cannot be undone.`}
                    busy={act.busy}
                    danger
                    onConfirm={async () => {
                      if (await act.run(() => vault('POST', `${mount}/revoke`, { serial_number: c.serial })))
                        load.reload();
                    }}
                  />
                )}
                {act.busy ? <span role="status">Revoking…</span> : null}
              </div>
              <ErrorBox error={act.error} />
              <details>
                <summary>PEM</summary>
                <pre class="value">{pem}</pre>
              </details>
            </>
          );
        }}
      </Section>
    </section>
  );
}
