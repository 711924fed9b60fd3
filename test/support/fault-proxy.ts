import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in the test process between the service and a dependency (PostgreSQL, Redis), that
 * the test can break the way networks and servers break: a real fault on a real connection, not
 * a mock of the driver (issue 40: outages are tested, not assumed).
 *
 * - `cut()`: every open connection is closed now, both ways (a server restart, an administrator
 *   ending sessions, a failover); new connections are forwarded as before.
 * - `down()`: as `cut()`, and every new connection is closed at once until `restore()` (the
 *   server is away).
 * - `stall()`: bytes stop flowing both ways on every connection, open or new, without a reset
 *   (a partition, a hung server); `restore()` lets them flow again.
 * - `restore()`: forwards everything again.
 */
export class FaultProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();
  private state: 'up' | 'down' | 'stalled' = 'up';
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  /** A proxy in front of the server of `url` (postgres:// or redis://), and `url` rewritten to go through it. */
  static async inFrontOf(url: string): Promise<{ proxy: FaultProxy; url: string }> {
    const parsed = new URL(url);
    const defaultPort = parsed.protocol.startsWith('redis') ? 6379 : 5432;
    const proxy = new FaultProxy({ host: parsed.hostname, port: Number(parsed.port || defaultPort) });
    await proxy.start();
    parsed.host = `127.0.0.1:${proxy.port}`;
    return { proxy, url: parsed.toString() };
  }

  async start(): Promise<void> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    if (typeof address === 'object' && address) this.port = address.port;
  }

  /** Connections open through the proxy now. */
  get connections(): number {
    return this.pairs.size;
  }

  cut(): void {
    for (const pair of this.pairs) this.drop(pair);
  }

  down(): void {
    this.state = 'down';
    this.cut();
  }

  stall(): void {
    this.state = 'stalled';
    // Unpiped, not only paused: a pipe resumes its source when the destination drains.
    for (const { client, upstream } of this.pairs) {
      if (upstream !== undefined) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        upstream.pause();
      }
      client.pause();
    }
  }

  restore(): void {
    this.state = 'up';
    for (const pair of this.pairs) {
      if (pair.upstream === undefined) this.link(pair);
      else this.flow(pair.client, pair.upstream);
    }
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }

  private accept(client: Socket): void {
    if (this.state === 'down') {
      client.destroy();
      return;
    }
    const pair = { client, upstream: undefined as Socket | undefined };
    this.pairs.add(pair);
    client.on('error', () => this.drop(pair));
    client.on('close', () => this.drop(pair));
    // Stalled: the connection is accepted, and nothing goes through until restore().
    if (this.state === 'stalled') client.pause();
    else this.link(pair);
  }

  private link(pair: { client: Socket; upstream: Socket | undefined }): void {
    const upstream = connect(this.target.port, this.target.host);
    pair.upstream = upstream;
    upstream.on('error', () => this.drop(pair));
    upstream.on('close', () => this.drop(pair));
    this.flow(pair.client, upstream);
  }

  private flow(client: Socket, upstream: Socket): void {
    client.pipe(upstream);
    upstream.pipe(client);
  }

  private drop(pair: { client: Socket; upstream: Socket | undefined }): void {
    if (!this.pairs.delete(pair)) return;
    // destroy(), not resetAndDestroy(): on Node 20 a reset of a socket whose peer has already
    // closed it can leave its handle open, spinning the event loop for ever.
    pair.client.destroy();
    pair.upstream?.destroy();
  }
}
