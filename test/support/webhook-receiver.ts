import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  /** The path and query the message was posted to. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type Answer = number | 'hang';

/**
 * A webhook endpoint for tests (D24), on loopback unless `host` says otherwise (`::`: every
 * address of this host): it records every message and answers with `answerWith`'s status (204 by
 * default; a 3xx carries a Location), or never ('hang') until closed.
 */
export async function startReceiver(host = '127.0.0.1') {
  const received: Received[] = [];
  let answer: () => Answer = () => 204;
  const hanging: ServerResponse[] = [];
  let open = 0;
  let mostAtOnce = 0;
  const server: Server = createServer((req, res) => {
    mostAtOnce = Math.max(mostAtOnce, ++open);
    res.on('close', () => open--);
    let body = '';
    req.on('data', (c: Buffer) => void (body += c.toString()));
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body });
      const status = answer();
      if (status === 'hang') return void hanging.push(res);
      res.writeHead(status, status >= 300 && status < 400 ? { location: 'http://127.0.0.1:1/elsewhere' } : {}).end('ignored');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    received,
    port,
    url: `http://127.0.0.1:${port}/hooks/listings`,
    /** The status of the next answers: a number, 'hang', or a function asked for each message. */
    /** The most requests this receiver had open at once (a request is open until answered or dropped by the sender). */
    mostAtOnce: () => mostAtOnce,
    answerWith(next: Answer | (() => Answer)) {
      answer = typeof next === 'function' ? next : () => next;
    },
    async close() {
      for (const res of hanging.splice(0)) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
