/**
 * A TCP relay in front of a real server that a test can cut and restore, on the same port: the
 * server "down" as its clients see it (connections refused, open ones reset), without stopping it.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from '../../scripts/local-servers.js';

export interface TcpProxy {
  /** http://127.0.0.1:<port> */
  url: string;
  down(): Promise<void>;
  /** Goes down once `bytes` more have been relayed towards the server (e.g. mid-upload); resolves when it has. */
  downAfter(bytes: number): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let cutAfter: { bytes: number; cut: () => void } | undefined;
  const relay = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    client.on('data', (chunk: Buffer) => {
      if (!cutAfter) return;
      cutAfter.bytes -= chunk.length;
      if (cutAfter.bytes <= 0) cutAfter.cut();
    });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  };
  const up = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer(relay);
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  const down = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  };
  const downAfter = (bytes: number) =>
    new Promise<void>((resolve) => {
      cutAfter = {
        bytes,
        cut: () => {
          cutAfter = undefined;
          void down().then(resolve);
        },
      };
    });
  await up();
  return { url: `http://127.0.0.1:${port}`, up, down, downAfter, close: down };
}
