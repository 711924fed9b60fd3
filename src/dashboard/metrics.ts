/**
 * What the dashboard tells the Prometheus metrics (issue 30), when METRICS_PORT is set
 * (src/metrics/index.ts): each answer, and each sign-in attempt's result. The dashboard itself
 * never loads prom-client.
 */
export type SignInResult = 'succeeded' | 'failed' | 'throttled';

export interface DashboardMetrics {
  /** An answer is complete; `route` is the route's pattern, or null when no route matched. */
  requestCompleted(method: string, route: string | null, status: number): void;
  /** A sign-in attempt got past the CSRF check: its result. */
  signIn(result: SignInResult): void;
}
