import { useLocation } from 'preact-iso';
import { tfe } from '../api';
import { getSession } from '../session';
import { ErrorBox, Title, useAction } from '../ui';

/**
 * The page `terraform login` opens (login.v1 in /.well-known/terraform.json): the signed-in
 * user approves, the server records an authorization code for the CLI's PKCE challenge and
 * the browser goes back to the CLI's localhost listener with it.
 */
export function Authorize() {
  const { query } = useLocation();
  const act = useAction();
  const s = getSession();
  let redirect: URL | undefined;
  try {
    redirect = new URL(query.redirect_uri ?? '');
  } catch {
    redirect = undefined;
  }
  const local =
    redirect && redirect.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(redirect.hostname);
  const deny = () => {
    if (!redirect || !local) return;
    const u = new URL(redirect);
    u.searchParams.set('error', 'access_denied');
    if (query.state) u.searchParams.set('state', query.state);
    window.location.assign(u.toString());
  };
  const approve = () =>
    act.run(async () => {
      const r = await tfe('POST', '/oauth/authorizations', {
        client_id: query.client_id ?? '',
        redirect_uri: query.redirect_uri ?? '',
        response_type: query.response_type ?? '',
        state: query.state ?? '',
        code_challenge: query.code_challenge ?? '',
        code_challenge_method: query.code_challenge_method ?? '',
      });
      window.location.assign(r.data.attributes['redirect-uri'] as string);
    });
  return (
    <section class="narrow">
      <Title>Authorize Terraform</Title>
      {!s.tfe ? (
        <p class="error" role="alert">
          Sign in with a user token (or the admin token) for the state API to approve a Terraform login.
        </p>
      ) : !local ? (
        <p class="error" role="alert">
          This request does not come from a Terraform CLI on this computer (its return address is not a localhost
          address), so it cannot be approved.
        </p>
      ) : (
        <>
          <p>
            <strong>{query.client_id || 'A client'}</strong> on this computer asks for a new API token for your account
            {s.user ? ` (${s.user})` : ''}. Terraform will store it in its credentials file.
          </p>
          <p class="hint">It will be sent back to {redirect!.host}.</p>
          <ErrorBox error={act.error} />
          <div class="actions">
            <button type="button" class="primary" disabled={act.busy} onClick={approve}>
              {act.busy ? 'Approving…' : 'Approve'}
            </button>
            <button type="button" disabled={act.busy} onClick={deny}>
              Deny
            </button>
          </div>
        </>
      )}
    </section>
  );
}
