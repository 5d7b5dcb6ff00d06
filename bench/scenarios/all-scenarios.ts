import { httpCeiling, stateCurrent } from './http.js';
import { pkiAcmeOrder } from './pki-acme.js';
import { pkiCertSearch } from './pki-cert-search.js';
import { pkiIssueP256, pkiIssueRsa2048, pkiSignP256 } from './pki-issue.js';
import { pkiCrl100k, pkiOcsp, pkiRevoke } from './pki-revocation.js';
import { stateCreateInline, stateList } from './state-api.js';
import { stateExtract1m, stateExtract200m, stateExtract50m } from './state-extract.js';
import { stateDownload50m, stateUpload1m, stateUpload200m } from './state-transfer.js';
import type { Scenario } from '../lib/types.js';

/** Every scenario, in the order `all` runs them (the CRL one last: it changes the mount's CRL settings). */
export const SCENARIOS: Scenario[] = [
  httpCeiling,
  stateCurrent,
  stateCreateInline,
  stateList,
  stateUpload1m,
  stateUpload200m,
  stateDownload50m,
  stateExtract1m,
  stateExtract50m,
  stateExtract200m,
  pkiSignP256,
  pkiIssueP256,
  pkiIssueRsa2048,
  pkiOcsp,
  pkiRevoke,
  pkiAcmeOrder,
  pkiCertSearch,
  pkiCrl100k,
];
