/**
 * A DNS stand-in (RFC 1035 over UDP, A records only) for the webhook tests: names map to IPv4
 * addresses the test chooses, so a webhook host can resolve to a private address the way a
 * hostile or rebinding DNS name would. Unknown names get NXDOMAIN.
 */
import dgram from 'node:dgram';

export interface DnsStandIn {
  port: number;
  /** Sets (or changes: DNS rebinding) the address of a name. */
  set(name: string, ipv4: string): void;
  close(): Promise<void>;
}

export async function startDnsStandIn(records: Record<string, string> = {}): Promise<DnsStandIn> {
  const table = new Map(Object.entries(records).map(([k, v]) => [k.toLowerCase(), v]));
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    // the question: labels up to a zero byte, then type and class
    let i = 12;
    const labels: string[] = [];
    while (i < msg.length && msg[i] !== 0) {
      const len = msg[i]!;
      labels.push(msg.subarray(i + 1, i + 1 + len).toString('ascii'));
      i += len + 1;
    }
    const questionEnd = i + 5;
    const qtype = msg.readUInt16BE(i + 1);
    const address = table.get(labels.join('.').toLowerCase());
    const answer = address && qtype === 1;
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(0x8180 | (address ? 0 : 3), 2); // response, recursion available, NOERROR / NXDOMAIN
    header.writeUInt16BE(1, 4); // one question
    header.writeUInt16BE(answer ? 1 : 0, 6);
    const parts = [header, msg.subarray(12, questionEnd)];
    if (answer) {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // name: pointer to the question
      rr.writeUInt16BE(1, 2); // A
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(0, 6); // TTL 0: every lookup asks again
      rr.writeUInt16BE(4, 10);
      address.split('.').forEach((o, k) => rr.writeUInt8(Number(o), 12 + k));
      parts.push(rr);
    }
    socket.send(Buffer.concat(parts), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    port: socket.address().port,
    set: (name, ipv4) => void table.set(name.toLowerCase(), ipv4),
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
