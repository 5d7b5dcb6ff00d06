import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { getSession, onSessionChange, signOut } from './session';
import { SignIn } from './pages/sign-in';
import { Home } from './pages/home';
import { Organizations, Workspaces } from './pages/state-lists';
import { Workspace } from './pages/workspace';
import { Version } from './pages/version';
import { Diff } from './pages/diff';
import { Mounts, Mount } from './pages/pki-mounts';
import { RoleEdit } from './pages/pki-role';
import { Certificate } from './pages/pki-cert';
import { Expiring } from './pages/pki-expiring';
import { Authorize } from './pages/authorize';

function useSession() {
  const [s, setS] = useState(getSession());
  useEffect(() => onSessionChange(() => setS(getSession())), []);
  return s;
}

function Guard({ children }: { children: preact.ComponentChildren }) {
  const s = useSession();
  const { url, route } = useLocation();
  const signedIn = Boolean(s.tfe || s.vault);
  useEffect(() => {
    if (!signedIn) route(`/ui/sign-in?next=${encodeURIComponent(url)}`, true);
  }, [signedIn, url]);
  return signedIn ? <>{children}</> : null;
}

function Nav() {
  const s = useSession();
  const { route } = useLocation();
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <a class="brand" href="/ui/">
        Strongroom
      </a>
      {s.tfe || s.vault ? (
        <nav aria-label="Main">
          {s.tfe ? <a href="/ui/orgs">State</a> : null}
          {s.vault ? <a href="/ui/pki">Certificates</a> : null}
          {s.vault ? <a href="/ui/expiring">Expiring soon</a> : null}
          <button
            type="button"
            class="link"
            onClick={() => {
              signOut();
              route('/ui/sign-in');
            }}
          >
            Sign out{s.user ? ` (${s.user})` : ''}
          </button>
        </nav>
      ) : null}
    </header>
  );
}

const guarded = (C: preact.AnyComponent) => () => (
  <Guard>
    <C />
  </Guard>
);

export function App() {
  return (
    <LocationProvider scope="/ui">
      <Nav />
      <main id="main">
        <Router>
          <Route path="/ui/sign-in" component={SignIn} />
          <Route path="/ui/" component={guarded(Home)} />
          <Route path="/ui/orgs" component={guarded(Organizations)} />
          <Route path="/ui/orgs/:org" component={guarded(Workspaces)} />
          <Route path="/ui/workspaces/:id" component={guarded(Workspace)} />
          <Route path="/ui/workspaces/:id/diff" component={guarded(Diff)} />
          <Route path="/ui/versions/:id" component={guarded(Version)} />
          <Route path="/ui/pki" component={guarded(Mounts)} />
          <Route path="/ui/pki/:mount" component={guarded(Mount)} />
          <Route path="/ui/pki/:mount/roles/:name" component={guarded(RoleEdit)} />
          <Route path="/ui/pki/:mount/certs/:serial" component={guarded(Certificate)} />
          <Route path="/ui/expiring" component={guarded(Expiring)} />
          <Route path="/ui/authorize" component={guarded(Authorize)} />
          <Route default component={NotFound} />
        </Router>
      </main>
    </LocationProvider>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <a href="/ui/">Go to the start page</a>
      </p>
    </section>
  );
}
