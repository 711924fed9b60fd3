/** The guard's order (D5), said the same way in every operation's description. */
export const CHECKS =
  'Checks, in this order, the first failure answering: the host (404), the key (401), the rate limit (429), the browser origin (403)';
