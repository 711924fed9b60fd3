import { isLocalhostName } from './hosts.js';

/**
 * What the SDK needs of `fetch`: the global `fetch` of Node.js and of browsers fits, and so does any
 * wrapper of it (to count, log or stub requests).
 */
export type FetchLike = (url: string, init: { method: string; headers: Record<string, string>; signal?: AbortSignal }) => Promise<Response>;

const IS_NODE = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

/**
 * The SDK's default transport: the global `fetch`, except for `localhost` and `*.localhost` URLs on
 * Node.js, which go to the loopback address with the URL's own `Host`.
 *
 * Why: browsers and curl map every `*.localhost` name to loopback (RFC 6761), and the API's local
 * server tells countries apart by host name (`api.localhost`, `api.my.localhost`, D3). Node's resolver
 * is the C library's, which on many Linux systems (glibc without nss-myhostname) knows `localhost`
 * from /etc/hosts but not `api.localhost`; and Node's `fetch` (undici) cannot be told to connect
 * elsewhere without a dependency (its Agent is not exposed) and drops a `Host` header it is given. So
 * local requests use `node:http` instead, connecting to 127.0.0.1 (then ::1 if that is refused) and
 * sending `Host: api.my.localhost:3000` as the URL says: the server sees exactly what curl would
 * send. `node:http` is loaded only then, through an import that bundlers leave alone, so browser
 * builds never see it. Every other URL goes to `fetch` untouched.
 */
export const fetchWithLocalhost: FetchLike = (url, init) => {
  if (IS_NODE) {
    const parsed = new URL(url);
    if (parsed.protocol === 'http:' && isLocalhostName(parsed.hostname)) return loopbackRequest(parsed, init);
  }
  return fetch(url, init);
};

/** A variable specifier: bundlers (webpack, Vite, esbuild) do not try to resolve it for the browser. */
const NODE_HTTP = 'node:http';
type NodeHttp = typeof import('node:http');
let nodeHttp: Promise<NodeHttp> | undefined;

async function loopbackRequest(url: URL, init: Parameters<FetchLike>[1]): Promise<Response> {
  const http = await (nodeHttp ??= import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_HTTP) as Promise<NodeHttp>);
  try {
    return await requestVia(http, '127.0.0.1', url, init);
  } catch (error) {
    // A server listening on ::1 only (e.g. HOST=::1).
    if ((error as NodeJS.ErrnoException).code === 'ECONNREFUSED') return requestVia(http, '::1', url, init);
    throw error;
  }
}

function requestVia(http: NodeHttp, address: string, url: URL, init: Parameters<FetchLike>[1]): Promise<Response> {
  return new Promise((resolve, reject) => {
    if (init.signal?.aborted) return reject(init.signal.reason);
    const request = http.request(
      {
        host: address,
        port: url.port === '' ? 80 : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: init.method,
        headers: { ...init.headers, host: url.host },
        signal: init.signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (Array.isArray(value)) for (const v of value) headers.append(name, v);
            else if (value !== undefined) headers.set(name, value);
          }
          const status = res.statusCode ?? 502;
          // A Response may not carry a body with these statuses, nor for HEAD.
          const bodyless = status === 204 || status === 205 || status === 304 || init.method === 'HEAD';
          resolve(new Response(bodyless ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage ?? '', headers }));
        });
      },
    );
    request.on('error', (error) => reject(init.signal?.aborted ? init.signal.reason : error));
    request.end();
  });
}
