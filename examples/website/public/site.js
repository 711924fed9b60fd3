// The example site's only script: placeholders for images that fail to load, and "Load more",
// which reads the next page through the site's own proxy (/api) with the SDK, in the browser.
// Without it the page works the same, with plain links.
import { ListingsClient } from '/assets/sdk/index.js';
import { countLine, displayPrice, displaySize, displayTitle } from '/assets/format.js';

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
        ...(more.dataset.usage ? { usageType: more.dataset.usage } : {}),
      });
      for (const listing of answer.items) list.append(card(listing));
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
function card(l) {
  const li = el('li', 'card');
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
  li.append(a, facts, tags);
  return li;
}
