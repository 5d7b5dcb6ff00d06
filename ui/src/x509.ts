/** A small X.509 reader for display: names, validity, key, extensions. Never trusted for decisions. */

interface Tlv {
  tag: number;
  start: number;
  content: number;
  end: number;
}

function read(b: Uint8Array, at: number): Tlv {
  const tag = b[at]!;
  let len = b[at + 1]!;
  let content = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[content + i]!;
    content += n;
  }
  return { tag, start: at, content, end: content + len };
}

function children(b: Uint8Array, t: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = t.content; at < t.end;) {
    const c = read(b, at);
    out.push(c);
    at = c.end;
  }
  return out;
}

const hex = (b: Uint8Array, t: Tlv) =>
  [...b.subarray(t.content, t.end)].map((x) => x.toString(16).padStart(2, '0')).join(':');

function oid(b: Uint8Array, t: Tlv): string {
  const bytes = b.subarray(t.content, t.end);
  const parts = [Math.floor(bytes[0]! / 40), bytes[0]! % 40];
  let v = 0;
  for (let i = 1; i < bytes.length; i++) {
    v = v * 128 + (bytes[i]! & 0x7f);
    if (!(bytes[i]! & 0x80)) {
      parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

function text(b: Uint8Array, t: Tlv): string {
  const bytes = b.subarray(t.content, t.end);
  if (t.tag === 0x1e) {
    let s = '';
    for (let i = 0; i + 1 < bytes.length; i += 2) s += String.fromCharCode((bytes[i]! << 8) | bytes[i + 1]!);
    return s;
  }
  return new TextDecoder().decode(bytes);
}

function time(b: Uint8Array, t: Tlv): Date {
  const s = text(b, t);
  const full = t.tag === 0x17 ? (Number(s.slice(0, 2)) >= 50 ? '19' : '20') + s : s;
  return new Date(
    `${full.slice(0, 4)}-${full.slice(4, 6)}-${full.slice(6, 8)}` +
      `T${full.slice(8, 10)}:${full.slice(10, 12)}:${full.slice(12, 14)}Z`,
  );
}

const NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.5': 'serialNumber',
  '2.5.4.9': 'street',
  '2.5.4.17': 'postalCode',
  '1.2.840.113549.1.9.1': 'emailAddress',
};

function name(b: Uint8Array, t: Tlv): string {
  return children(b, t)
    .flatMap((rdn) => children(b, rdn))
    .map((atv) => {
      const [type, value] = children(b, atv);
      const o = oid(b, type!);
      return `${NAMES[o] ?? o}=${text(b, value!)}`;
    })
    .join(', ');
}

const EXT_NAMES: Record<string, string> = {
  '2.5.29.17': 'Subject alternative names',
  '2.5.29.19': 'Basic constraints',
  '2.5.29.15': 'Key usage',
  '2.5.29.37': 'Extended key usage',
  '2.5.29.14': 'Subject key identifier',
  '2.5.29.35': 'Authority key identifier',
  '2.5.29.31': 'CRL distribution points',
  '1.3.6.1.5.5.7.1.1': 'Authority information access',
  '2.5.29.32': 'Certificate policies',
  '2.5.29.30': 'Name constraints',
};
const EKU: Record<string, string> = {
  '1.3.6.1.5.5.7.3.1': 'serverAuth',
  '1.3.6.1.5.5.7.3.2': 'clientAuth',
  '1.3.6.1.5.5.7.3.3': 'codeSigning',
  '1.3.6.1.5.5.7.3.4': 'emailProtection',
  '1.3.6.1.5.5.7.3.9': 'OCSPSigning',
};
const KU = [
  'digitalSignature',
  'nonRepudiation',
  'keyEncipherment',
  'dataEncipherment',
  'keyAgreement',
  'keyCertSign',
  'cRLSign',
  'encipherOnly',
  'decipherOnly',
];
const CURVES: Record<string, string> = {
  '1.2.840.10045.3.1.7': 'P-256',
  '1.3.132.0.34': 'P-384',
  '1.3.132.0.35': 'P-521',
};

function generalNames(b: Uint8Array, t: Tlv): string[] {
  return children(b, t).map((g) => {
    const k = g.tag & 0x1f;
    if (k === 2) return `DNS:${text(b, g)}`;
    if (k === 1) return `email:${text(b, g)}`;
    if (k === 6) return `URI:${text(b, g)}`;
    if (k === 7) {
      const bytes = [...b.subarray(g.content, g.end)];
      if (bytes.length === 4) return `IP:${bytes.join('.')}`;
      const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
      return `IP:${groups.join(':')}`;
    }
    if (k === 4) return `dirName:${name(b, children(b, g)[0]!)}`;
    return `other:${hex(b, g)}`;
  });
}

function extensionValue(b: Uint8Array, id: string, v: Tlv): string {
  try {
    const inner = read(b, v.content);
    if (id === '2.5.29.17') return generalNames(b, inner).join(', ');
    if (id === '2.5.29.19') {
      const c = children(b, inner);
      const ca = c[0]?.tag === 0x01 && b[c[0].content] !== 0;
      const path = c.find((x) => x.tag === 0x02);
      return `CA: ${ca ? 'yes' : 'no'}${path ? `, path length ${b[path.content]}` : ''}`;
    }
    if (id === '2.5.29.15') {
      const bits = b.subarray(inner.content + 1, inner.end);
      return KU.filter((_, i) => (bits[i >> 3] ?? 0) & (0x80 >> (i & 7))).join(', ');
    }
    if (id === '2.5.29.37')
      return children(b, inner)
        .map((o) => EKU[oid(b, o)] ?? oid(b, o))
        .join(', ');
    if (id === '2.5.29.14') return hex(b, inner);
    if (id === '2.5.29.35') {
      const k = children(b, inner).find((x) => (x.tag & 0x1f) === 0);
      return k ? hex(b, k) : '';
    }
    if (id === '1.3.6.1.5.5.7.1.1')
      return children(b, inner)
        .map((ad) => {
          const [m, loc] = children(b, ad);
          return `${oid(b, m!) === '1.3.6.1.5.5.7.48.1' ? 'OCSP' : 'CA issuers'}: ${text(b, loc!)}`;
        })
        .join(', ');
    if (id === '2.5.29.31') {
      const urls: string[] = [];
      const walk = (t: Tlv) => {
        if ((t.tag & 0x1f) === 6 && t.tag & 0x80) urls.push(text(b, t));
        else if (t.tag & 0x20) children(b, t).forEach(walk);
      };
      walk(inner);
      return urls.join(', ');
    }
  } catch {
    /* shown as bytes below */
  }
  return `${v.end - v.content} bytes`;
}

export interface DecodedCertificate {
  serial: string;
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  key: string;
  signature: string;
  extensions: { name: string; critical: boolean; value: string }[];
  sans: string[];
}

export function pemToDer(pem: string): Uint8Array {
  const body = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  return Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
}

export function decodeCertificate(pem: string): DecodedCertificate {
  const b = pemToDer(pem);
  const [tbs, sigAlg] = children(b, read(b, 0));
  const f = children(b, tbs!);
  let i = f[0]!.tag === 0xa0 ? 1 : 0;
  const serial = hex(b, f[i++]!);
  i++; // signature algorithm
  const issuer = name(b, f[i++]!);
  const [nb, na] = children(b, f[i++]!);
  const subject = name(b, f[i++]!);
  const spki = f[i++]!;
  const [alg, bits] = children(b, spki);
  const [algOid, param] = children(b, alg!);
  const kOid = oid(b, algOid!);
  let key = kOid;
  if (kOid === '1.2.840.10045.2.1')
    key = `EC ${param && param.tag === 0x06 ? (CURVES[oid(b, param)] ?? oid(b, param)) : ''}`;
  else if (kOid === '1.2.840.113549.1.1.1') {
    const rsa = read(b, bits!.content + 1);
    const mod = children(b, rsa)[0]!;
    let len = mod.end - mod.content;
    if (b[mod.content] === 0) len--;
    key = `RSA ${len * 8} bits`;
  } else if (kOid === '1.3.101.112') key = 'Ed25519';
  const extensions: DecodedCertificate['extensions'] = [];
  let sans: string[] = [];
  const extWrap = f.slice(i).find((x) => x.tag === 0xa3);
  if (extWrap) {
    for (const e of children(b, children(b, extWrap)[0]!)) {
      const parts = children(b, e);
      const id = oid(b, parts[0]!);
      const critical = parts.length === 3 && b[parts[1]!.content] !== 0;
      const v = parts[parts.length - 1]!;
      const value = extensionValue(b, id, v);
      if (id === '2.5.29.17') sans = value.split(', ').filter(Boolean);
      extensions.push({ name: EXT_NAMES[id] ?? id, critical, value });
    }
  }
  const sigOid = oid(b, children(b, sigAlg!)[0]!);
  const SIG: Record<string, string> = {
    '1.2.840.10045.4.3.2': 'ECDSA with SHA-256',
    '1.2.840.10045.4.3.3': 'ECDSA with SHA-384',
    '1.2.840.10045.4.3.4': 'ECDSA with SHA-512',
    '1.2.840.113549.1.1.11': 'RSA with SHA-256',
    '1.2.840.113549.1.1.12': 'RSA with SHA-384',
    '1.2.840.113549.1.1.13': 'RSA with SHA-512',
    '1.3.101.112': 'Ed25519',
  };
  return {
    serial,
    subject,
    issuer,
    notBefore: time(b, nb!),
    notAfter: time(b, na!),
    key,
    signature: SIG[sigOid] ?? sigOid,
    extensions,
    sans,
  };
}
