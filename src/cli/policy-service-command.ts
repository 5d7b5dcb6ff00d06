import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseRules, RulesError } from '../pki/external-policy/reference-service-rules.js';
import { startReferencePolicyService } from '../pki/external-policy/reference-service.js';
import type { RunningReferenceService } from '../pki/external-policy/reference-service.js';

export const POLICY_SERVICE_USAGE = `\
Usage: strongroom policy-service --rules FILE --tls-cert FILE --tls-key FILE [options]

Runs the reference external policy service: an HTTPS endpoint for config/external-policy
that decides external-policy/issue, sign and sign-intermediate requests from the JSON rules
in FILE (see docs/external-policy.md).

  --rules FILE       JSON rules: per policy name allowed names, TTL cap, issuer, warnings, deny
  --tls-cert FILE    PEM certificate (chain) the service presents
  --tls-key FILE     PEM private key of --tls-cert
  --client-ca FILE   Require client certificates issued by these CAs (mutual TLS)
  --listen ADDR      host:port to listen on [default: 127.0.0.1:8443]
`;

export interface PolicyServiceIo {
  out(text: string): void;
  err(text: string): void;
}

/** Starts the service; resolves with the running server (the process keeps serving until a signal). */
export async function runPolicyServiceCommand(
  argv: string[],
  io: PolicyServiceIo,
): Promise<RunningReferenceService | number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      rules: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'client-ca': { type: 'string' },
      listen: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    io.out(POLICY_SERVICE_USAGE);
    return 0;
  }
  if (!values.rules || !values['tls-cert'] || !values['tls-key']) {
    io.err(`--rules, --tls-cert and --tls-key are required\n\n${POLICY_SERVICE_USAGE}`);
    return 2;
  }
  const listen = values.listen ?? '127.0.0.1:8443';
  const m = /^(.*):(\d+)$/.exec(listen);
  if (!m) {
    io.err(`--listen must be host:port, not "${listen}"\n`);
    return 2;
  }
  let rules;
  try {
    rules = parseRules(await readFile(values.rules, 'utf8'));
  } catch (err) {
    if (err instanceof RulesError || (err as NodeJS.ErrnoException).code !== undefined) {
      io.err(`${values.rules}: ${(err as Error).message}\n`);
      return 2;
    }
    throw err;
  }
  const running = await startReferencePolicyService({
    rules,
    certPem: await readFile(values['tls-cert'], 'utf8'),
    keyPem: await readFile(values['tls-key'], 'utf8'),
    ...(values['client-ca'] ? { clientCaPem: await readFile(values['client-ca'], 'utf8') } : {}),
    host: m[1]!.replace(/^\[|\]$/g, ''),
    port: Number(m[2]),
    log: (line) => io.out(`${new Date().toISOString()} ${line}\n`),
  });
  io.out(`policy service listening at ${running.url} (${rules.policies.size} policies)\n`);
  return running;
}
