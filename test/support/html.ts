import assert from 'node:assert/strict';
import { parse, type HTMLElement } from 'node-html-parser';

/**
 * Pages read as a browser's accessibility tree reads them, not as markup: elements by their role
 * (the tag that gives it) and their text, attributes by name. Class names and attribute order are
 * the page's own business; a test that depends on them breaks on a restyle.
 */
export function dom(html: string): HTMLElement {
  // <pre> parsed as elements too (node-html-parser keeps its content as raw text by default).
  return parse(html, { blockTextElements: { script: true, noscript: true, style: true } });
}

/** The one element matching `selector` whose visible text is `name` (its accessible name). */
export function named(root: HTMLElement, selector: string, name: string): HTMLElement {
  const found = root.querySelectorAll(selector).filter((element) => element.text.replace(/\s+/g, ' ').trim() === name);
  assert.equal(found.length, 1, `one ${selector} named "${name}", found ${found.length}`);
  return found[0]!;
}

/** The one element matching `selector`. */
export function only(root: HTMLElement, selector: string): HTMLElement {
  const found = root.querySelectorAll(selector);
  assert.equal(found.length, 1, `one ${selector}, found ${found.length}`);
  return found[0]!;
}
