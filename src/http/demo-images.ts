import type { FastifyInstance } from 'fastify';
import { notFound } from '../core/api-error.js';
import { USAGE_TAXONOMY } from '../listings/taxonomy.js';

/**
 * The demo listings' photos, served by this program under DEMO_IMAGES_PATH so that a page built
 * on the demo shows pictures with no network (the demo runs on a laptop, often offline). Each is
 * a small SVG drawn from its name, `<usage>-<n>.svg`: a usage type of the taxonomy (slugged) and a
 * photo number from 1 to 3. Nothing is stored or read from disk.
 *
 * An `<img>` never runs an SVG's scripts, and these have none; the content-security policy says
 * so to a browser that opens one directly.
 */
export const DEMO_IMAGES_PATH = '/demo/images';

const slug = (name: string): string => name.toLowerCase().replace(/&/g, '').replace(/[^a-z0-9]+/g, '-');

/** Each usage name of the taxonomy by its slug, with its main type (for the colours). */
const USAGES = new Map(Object.entries(USAGE_TAXONOMY).flatMap(([main, subs]) => [main, ...subs].map((name) => [slug(name), { name, main }] as const)));

const COLOURS: Record<string, [string, string]> = {
  Office: ['#1d4ed8', '#93c5fd'],
  'F&B': ['#b45309', '#fcd34d'],
  Industrial: ['#374151', '#9ca3af'],
  Retail: ['#be185d', '#f9a8d4'],
  Clinic: ['#047857', '#6ee7b7'],
};

/** The file name of a demo photo: photo `n` (1 to 3) of a listing of this usage type. */
export function demoImageName(usage: string, n: number): string {
  return `${slug(usage)}-${n}.svg`;
}

/** The SVG of a demo photo by its file name, or undefined for a name that is not one. */
export function demoImage(file: string): string | undefined {
  const m = /^([a-z0-9-]+)-([1-3])\.svg$/.exec(file);
  const usage = m === null ? undefined : USAGES.get(m[1]!);
  if (usage === undefined) return undefined;
  const n = Number(m![2]);
  const [dark, light] = COLOURS[usage.main]!;
  // A skyline whose windows shift with the photo number, so the three photos of a listing differ.
  const towers = [0, 1, 2, 3, 4].map((i) => {
    const height = 120 + ((i * 37 + n * 53) % 140);
    return `<rect x="${60 + i * 140}" y="${400 - height}" width="110" height="${height}" rx="6" fill="${dark}" opacity="${0.55 + i * 0.08}"/>`;
  }).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="500" viewBox="0 0 800 500" role="img" aria-label="${escapeXml(usage.name)}, demo photo ${n}">`
    + `<defs><linearGradient id="g" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${light}"/><stop offset="1" stop-color="#ffffff"/></linearGradient></defs>`
    + `<rect width="800" height="500" fill="url(#g)"/>${towers}<rect y="400" width="800" height="100" fill="${dark}"/>`
    + `<text x="40" y="462" font-family="system-ui, sans-serif" font-size="34" font-weight="600" fill="#ffffff">${escapeXml(usage.name)}</text>`
    + `<text x="760" y="462" text-anchor="end" font-family="system-ui, sans-serif" font-size="22" fill="#ffffff">demo photo ${n} of 3</text></svg>`;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** `GET /demo/images/:file`, on any host and with no key, like the images of real listings. */
export async function demoImageRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { file: string } }>(`${DEMO_IMAGES_PATH}/:file`, async (request, reply) => {
    const svg = demoImage(request.params.file);
    if (svg === undefined) throw notFound(`No such demo image. Demo images are ${DEMO_IMAGES_PATH}/<usage type>-<1 to 3>.svg, e.g. ${DEMO_IMAGES_PATH}/cafe-1.svg.`, 'unknown_route');
    return reply
      .type('image/svg+xml; charset=utf-8')
      .header('cache-control', 'public, max-age=86400')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      .send(svg);
  });
}
