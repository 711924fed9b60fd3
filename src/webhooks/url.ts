import { isIP } from 'node:net';

/** D24: at most this many characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2000;

/** A loopback host by its name or literal address: the only hosts `http` is allowed for (D24). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * Why a webhook URL is refused (D24), in one sentence naming the problem, or undefined when it is
 * accepted. The address it resolves to is checked at each delivery (address.ts), not here: a
 * name's addresses can change after it is registered.
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
  return undefined;
}
