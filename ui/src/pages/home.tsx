import { getSession } from '../session';
import { Title } from '../ui';

export function Home() {
  const s = getSession();
  return (
    <section>
      <Title>Strongroom</Title>
      <div class="cards">
        {s.tfe ? (
          <a class="card" href="/ui/orgs">
            <h2>Terraform state</h2>
            <p>Organizations, workspaces, state history, locks, rollbacks and diffs.</p>
          </a>
        ) : (
          <div class="card muted">
            <h2>Terraform state</h2>
            <p>Sign in with a state token (the admin token or a user token) to see workspaces.</p>
          </div>
        )}
        {s.vault ? (
          <a class="card" href="/ui/pki">
            <h2>Certificates</h2>
            <p>PKI mounts, issuers, keys, roles and the certificate inventory.</p>
          </a>
        ) : (
          <div class="card muted">
            <h2>Certificates</h2>
            <p>Sign in with a Vault token (or the admin token) to see PKI mounts.</p>
          </div>
        )}
        {s.vault ? (
          <a class="card" href="/ui/expiring">
            <h2>Expiring soon</h2>
            <p>Certificates that expire in the coming days, across the mounts you can read.</p>
          </a>
        ) : null}
      </div>
    </section>
  );
}
