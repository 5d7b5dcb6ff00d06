/**
 * A tiny authoritative DNS server over UDP on 127.0.0.1 for ACME validations: the load
 * generator and the tests decide the answers (A and TXT records).
 */
import { createSocket } from 'node:dgram';
import dnsPacket from 'dns-packet';

export interface DnsRecord {
  type: 'A' | 'TXT';
  data: string;
}

/** Records for `name` (lower case, no trailing dot) and `type`; undefined: the name does not exist. */
export type DnsLookup = (name: string, type: string) => DnsRecord[] | undefined;

export async function startDnsServer(lookup: DnsLookup): Promise<{ address: string; close(): Promise<void> }> {
  const socket = createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    let q: dnsPacket.Packet;
    try {
      q = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const question = q.questions?.[0];
    if (!question) return;
    const records = lookup(question.name.toLowerCase().replace(/\.$/, ''), question.type);
    const reply = dnsPacket.encode({
      type: 'response',
      id: q.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
      questions: q.questions,
      answers: (records ?? []).map((r) => ({ type: r.type, name: question.name, ttl: 1, data: r.data })),
      ...(records === undefined ? { rcode: 'NXDOMAIN' } : {}),
    } as dnsPacket.Packet);
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
