/**
 * The delivery slots of one instance, shared fairly between tenants (issue 43, D24): at most
 * `limit` attempts at once, of which one tenant holds at most `perTenant`; a freed slot goes to the
 * waiting tenant that holds the fewest, and among those to the one that has waited longest. A
 * tenant whose endpoints hang therefore keeps what it holds (an attempt runs to its timeout) but
 * gets no more while another tenant waits, and never more than its cap: a healthy tenant's attempt
 * waits for a slot only when every slot is taken by tenants holding no more than it does.
 *
 * Why not a plain semaphore or p-limit: their queue is first come, first served, so a tenant that
 * queues a hundred attempts (an import to its ten endpoints, a backlog) runs ahead of one queued
 * after it; and neither caps a tenant. See docs/design/webhook-delivery.md.
 */
export class FairSlots {
  /** Tenants with someone waiting, in the order they have been waiting (served ones go to the back). */
  private readonly waiting = new Map<string, Array<() => void>>();
  private readonly held = new Map<string, number>();
  private inUse = 0;

  constructor(
    readonly limit: number,
    readonly perTenant: number = Math.max(1, Math.floor(limit / 4)),
  ) {
    if (!(limit >= 1 && perTenant >= 1)) throw new RangeError('FairSlots: limit and perTenant must be at least 1');
  }

  /** Slots taken now. */
  get size(): number {
    return this.inUse;
  }

  /** Resolves, when a slot is the tenant's, with the function that gives it back (once). */
  acquire(tenant: string): Promise<() => void> {
    return new Promise((resolve) => {
      const grant = () => {
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.release(tenant);
        });
      };
      const queue = this.waiting.get(tenant);
      if (queue !== undefined) queue.push(grant);
      else this.waiting.set(tenant, [grant]);
      this.dispatch();
    });
  }

  private release(tenant: string): void {
    this.inUse--;
    const held = this.held.get(tenant)! - 1;
    if (held === 0) this.held.delete(tenant);
    else this.held.set(tenant, held);
    this.dispatch();
  }

  /** Grants free slots to waiting tenants, fewest held first. */
  private dispatch(): void {
    while (this.inUse < this.limit) {
      const tenant = this.next();
      if (tenant === undefined) return;
      const queue = this.waiting.get(tenant)!;
      const grant = queue.shift()!;
      this.waiting.delete(tenant);
      if (queue.length > 0) this.waiting.set(tenant, queue);
      this.inUse++;
      this.held.set(tenant, (this.held.get(tenant) ?? 0) + 1);
      grant();
    }
  }

  /**
   * The waiting tenant under its cap that holds the fewest slots, the longest waiting among equals.
   * A tenant holding none ends the scan at once; tenants holding some are at most `limit`, so a
   * scan is short whatever the number of tenants waiting.
   */
  private next(): string | undefined {
    let best: string | undefined;
    let fewest = Infinity;
    for (const tenant of this.waiting.keys()) {
      const held = this.held.get(tenant) ?? 0;
      if (held === 0) return tenant;
      if (held < fewest && held < this.perTenant) {
        best = tenant;
        fewest = held;
      }
    }
    return best;
  }
}
