// The example site's only script: placeholders for images that fail to load, and "Load more",
// which reads the next page of the same search (text, usage type, place) through the site's own
// proxy (/api) with the SDK, in the browser, and draws the map again with the cards it adds.
// Without it the page works the same, with plain links.
import { ListingsClient } from '/assets/sdk/index.js';
import { countLine, displayDistance, displayPrice, displaySize, displayTitle, mapCaption } from '/assets/format.js';
import { distanceMetres, plot } from '/assets/geo.js';

const markBroken = (img) => img.closest('.thumb')?.classList.add('broken');
document.addEventListener('error', (event) => { if (event.target instanceof HTMLImageElement) markBroken(event.target); }, true);
for (const img of document.querySelectorAll('.thumb img')) if (img.complete && img.naturalWidth === 0) markBroken(img);

const more = document.querySelector('[data-load-more]');
const list = document.getElementById('listings');
if (more && list) {
  // No key here: the site's server adds it. Same origin, so no CORS either.
  const client = new ListingsClient({ baseUrl: `${location.origin}/api` });
  const status = document.getElementById('status');
  const count = document.getElementById('count');
  // The search the page shows, as the server wrote it on the link (render.ts listPage).
  const { usage, q, nearLat, nearLng, nearName, radiusM } = more.dataset;
  const near = nearLat ? { lat: Number(nearLat), lng: Number(nearLng), name: nearName, radiusM: Number(radiusM) } : undefined;
  more.textContent = 'Load more';
  more.previousElementSibling?.remove(); // "Previous page" makes no sense once pages pile up
  more.addEventListener('click', async (event) => {
    event.preventDefault();
    if (more.getAttribute('aria-busy') === 'true') return;
    more.setAttribute('aria-busy', 'true');
    more.textContent = 'Loading…';
    status.textContent = '';
    const page = Number(more.dataset.page);
    try {
      const answer = await client.listings.list({
        page,
        perPage: Number(more.dataset.perPage),
        ...(usage ? { usageType: usage } : {}),
        ...(q ? { q } : {}),
        ...(near ? { near: { lat: near.lat, lng: near.lng }, radiusM: near.radiusM, sort: 'distance' } : {}),
      });
      for (const listing of answer.items) list.append(card(listing, near));
      drawMap(list);
      // The line above the cards said "page 1 of N": it now says how many of them are shown.
      if (count) count.textContent = countLine(answer, list.children.length);
      if (answer.page >= answer.pages) more.remove();
      else {
        more.dataset.page = String(page + 1);
        const next = new URL(more.href);
        next.searchParams.set('page', String(page + 1));
        more.href = next.href;
      }
    } catch (error) {
      status.textContent = 'More listings could not be loaded just now. Try again, or use the link.';
    } finally {
      more.removeAttribute('aria-busy');
      more.textContent = 'Load more';
    }
  });
}

// The same card as the server renders (render.ts), built with DOM methods: nothing is parsed as HTML.
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
function card(l, near) {
  const li = el('li', 'card');
  if (l.location) Object.assign(li.dataset, { lat: String(l.location.lat), lng: String(l.location.lng) });
  const a = el('a', 'card-link');
  a.href = `/listings/${encodeURIComponent(l.id)}`;
  const src = l.images[l.cover_image_index] ?? l.images[0];
  const thumb = el('div', src && /^https?:/.test(src) ? 'thumb' : 'thumb thumb-none');
  if (thumb.className === 'thumb') {
    thumb.append(el('span', 'thumb-note', 'Photo unavailable'));
    const img = el('img');
    Object.assign(img, { src, alt: '', loading: 'lazy', decoding: 'async', width: 640, height: 480 });
    thumb.append(img);
  } else thumb.append(el('span', 'thumb-note', 'No photo'));
  a.append(thumb, el('h2', 'card-title', displayTitle(l)));
  const facts = el('p', 'facts');
  facts.append(el('span', 'size', displaySize(l.size_sqft)), el('span', 'price', displayPrice(l)));
  const tags = el('ul', 'tags');
  for (const u of l.usage_types) tags.append(el('li', undefined, u));
  li.append(a, facts);
  if (near && l.location) li.append(el('p', 'distance', `${displayDistance(distanceMetres(near, l.location))} from ${near.name}`));
  li.append(tags);
  return li;
}

// The map of the cards shown, as the server draws it (render.ts resultsMap), from the cards'
// data-lat/data-lng and the figure's data-near-*: the points' bounding box grows with the cards
// "Load more" adds.
const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children);
  return node;
}
function svgTitle(text) {
  const title = document.createElementNS(SVG, 'title');
  title.textContent = text;
  return title;
}
function drawMap(cards) {
  const figure = document.getElementById('map');
  if (!figure) return;
  // The place searched near, as the server wrote it on the figure.
  const { nearLat, nearLng, nearName, radiusM } = figure.dataset;
  const near = nearLat ? { lat: Number(nearLat), lng: Number(nearLng), name: nearName, radiusM: Number(radiusM) } : undefined;
  const shown = [...cards.children].map((li) => ({
    href: li.querySelector('.card-link').getAttribute('href'),
    title: li.querySelector('.card-title').textContent,
    location: li.dataset.lat ? { lat: Number(li.dataset.lat), lng: Number(li.dataset.lng) } : null,
  }));
  const located = shown.filter((s) => s.location);
  const offMap = shown.filter((s) => !s.location);
  const drawing = plot(located.map((s) => s.location), near);
  const parts = [];
  if (drawing) {
    const { width, height } = drawing;
    const points = located.map((s) => {
      const { x, y } = drawing.at(s.location);
      const label = near ? `${s.title}, ${displayDistance(distanceMetres(near, s.location))} from ${near.name}` : s.title;
      return svg('a', { class: 'map-point', href: s.href, 'aria-label': label }, svg('circle', { cx: x, cy: y, r: 6 }, svgTitle(s.title)));
    });
    const marks = [svg('rect', { class: 'map-ground', width, height, rx: 8 }), svg('path', { class: 'map-grid', d: drawing.grid })];
    let centre;
    if (near) {
      const { x, y } = drawing.at(near);
      marks.push(svg('circle', { class: 'map-radius', cx: x, cy: y, r: Math.round((near.radiusM / drawing.metresPerUnit) * 10) / 10 }));
      centre = svg('g', { class: 'map-centre' }, svgTitle(near.name), svg('circle', { cx: x, cy: y, r: 8 }), svg('path', { d: `M${x - 5} ${y}h10M${x} ${y - 5}v10` }));
    }
    marks.push(svg('g', { class: 'map-points' }, ...points));
    if (centre) marks.push(centre);
    const label = svg('text', { x: 12, y: height - 18 });
    label.textContent = displayDistance(drawing.scale.metres);
    marks.push(svg('g', { class: 'map-scale' }, svg('path', { d: `M12 ${height - 12}h${drawing.scale.length}` }), label));
    parts.push(svg('svg', { class: 'map-plot', viewBox: `0 0 ${width} ${height}`, width, height, 'aria-labelledby': 'map-caption' }, ...marks));
  }
  const caption = el('figcaption', undefined, mapCaption(located.length, offMap.length, near?.name));
  caption.id = 'map-caption';
  parts.push(caption);
  if (offMap.length > 0) {
    const p = el('p', 'off-map', 'Not on the map (no location): ');
    offMap.forEach((s, i) => {
      const a = el('a', undefined, s.title);
      a.href = s.href;
      p.append(...(i > 0 ? [', ', a] : [a]));
    });
    parts.push(p);
  }
  figure.replaceChildren(...parts);
}
