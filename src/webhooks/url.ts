import { isIP } from 'node:net';
import { isLoopbackHost } from '../core/formats.js';
import { neverAllowedReason } from './address.js';

/** D24: at most this many characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2000;

/**
 * Why a webhook URL is refused (D24), in one sentence naming the problem, or undefined when it is
 * accepted. A host written as an address is refused here when no deployment may send to it
 * (broadcast, multicast, documentation...: address.ts); a name is not resolved here: its
 * addresses can change after it is registered, so the address is checked at each delivery.
 */
export function webhookUrlProblem(text: string): string | undefined {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) return `The URL is ${text.length} characters long; at most ${MAX_WEBHOOK_URL_LENGTH} are allowed.`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'The URL is not an absolute URL; give one such as https://www.example.com/webhooks/listings.';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `The URL's scheme is "${url.protocol.slice(0, -1)}"; use https.`;
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) return 'The URL uses http; use https (http is allowed only for localhost and loopback addresses).';
  if (url.username !== '' || url.password !== '') return 'The URL holds a user name or password; remove them (messages are authenticated by their signature).';
  if (text.includes('#')) return 'The URL holds a fragment (#...); remove it.';
  const address = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const range = isIP(address) === 0 ? undefined : neverAllowedReason(address);
  if (range !== undefined) return `The URL's address ${address} is in the special-purpose range "${range}", not one host on the internet; use your site's address or name.`;
  return undefined;
}
