/**
 * Distances and the results' map, worked out on this side: no geocoder, no map tiles, nothing
 * fetched. Used by the server's pages (render.ts) and, compiled as it is, by the browser's
 * "Load more" (public/site.js imports /assets/geo.js), which draws the map again with the cards it
 * adds. No imports: it runs in both.
 */

/** A point in WGS 84 decimal degrees (the API's `location`, D28). */
export interface LatLng {
  lat: number;
  lng: number;
}

/** The sphere the API measures `near` and `radius_m` on (D28). */
export const EARTH_RADIUS_M = 6_371_008.8;
const RADIAN = Math.PI / 180;
/** Metres in one degree of latitude (and of longitude at the equator) on that sphere. */
const METRES_PER_DEGREE = EARTH_RADIUS_M * RADIAN;

/** The great-circle distance in metres (haversine), as the API measures it. */
export function distanceMetres(a: LatLng, b: LatLng): number {
  const dLat = (b.lat - a.lat) * RADIAN;
  const dLng = (b.lng - a.lng) * RADIAN;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * RADIAN) * Math.cos(b.lat * RADIAN) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** A drawing of points in their bounding box: where each is drawn, and a scale bar. */
export interface Plot {
  /** The viewBox's size: `width` as asked, `height` from the points' shape (half to five quarters of it). */
  width: number;
  height: number;
  /** Where a point is drawn, in the viewBox's units (north up; x and y to one decimal). */
  at(point: LatLng): { x: number; y: number };
  /** Metres per unit of the viewBox. */
  metresPerUnit: number;
  /** A round distance for the scale bar, about a quarter of the width or less, and its length in units. */
  scale: { metres: number; length: number };
  /** A grid of lines `scale.metres` apart (as a path's `d`): a sense of distance, as on a map. */
  grid: string;
}

/** The smallest extent drawn, in metres: one building's units, a few metres apart, still show apart. */
const MIN_SPAN_M = 400;
const ROUND_DISTANCES = [10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000];

/**
 * Lays out `points` (and `centre`, when there is one, so that it is in the picture) in a box
 * `width` units wide: an equirectangular projection around their middle latitude (longitude
 * scaled by cos(latitude), so that a kilometre is as long across as up), the same scale both
 * ways, `padding` units kept clear at every edge. Undefined when there is nothing to draw. (A set
 * of points across the antimeridian is drawn the long way round: the site's places are not near it.)
 */
export function plot(points: readonly LatLng[], centre?: LatLng, width = 400, padding = 20): Plot | undefined {
  const all = centre === undefined ? [...points] : [...points, centre];
  if (all.length === 0) return undefined;
  const lats = all.map((p) => p.lat);
  const midLat = (Math.min(...lats) + Math.max(...lats)) / 2;
  const cos = Math.cos(midLat * RADIAN);
  // In metres from (0°, 0°) along the parallel of midLat, and north.
  const east = (p: LatLng) => p.lng * cos * METRES_PER_DEGREE;
  const north = (p: LatLng) => p.lat * METRES_PER_DEGREE;
  const xs = all.map(east);
  const ys = all.map(north);
  const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const spanX = Math.max(maxX - minX, MIN_SPAN_M);
  const spanY = Math.max(maxY - minY, MIN_SPAN_M);
  const inner = width - 2 * padding;
  const height = Math.round(Math.min(Math.max(inner * (spanY / spanX), width * 0.5 - 2 * padding), width * 1.25 - 2 * padding) + 2 * padding);
  const perMetre = Math.min(inner / spanX, (height - 2 * padding) / spanY);
  const midX = (minX + maxX) / 2;
  const midY = (minY + maxY) / 2;
  const round = (n: number) => Math.round(n * 10) / 10;
  const metresPerUnit = 1 / perMetre;
  const quarter = (width / 4) * metresPerUnit;
  const metres = [...ROUND_DISTANCES].reverse().find((d) => d <= quarter) ?? ROUND_DISTANCES[0]!;
  // Grid lines at whole multiples of the scale's distance, east and north, across the picture.
  const lines: string[] = [];
  const across = (mid: number, half: number, draw: (at: number) => string) => {
    const from = Math.ceil((mid - half / perMetre) / metres);
    for (let k = from; k * metres <= mid + half / perMetre; k++) lines.push(draw(round(half + (k * metres - mid) * perMetre)));
  };
  across(midX, width / 2, (x) => `M${x} 0V${height}`);
  across(midY, height / 2, (y) => `M0 ${round(height - y)}H${width}`);
  return {
    width,
    height,
    grid: lines.join(''),
    at: (p) => ({ x: round(width / 2 + (east(p) - midX) * perMetre), y: round(height / 2 - (north(p) - midY) * perMetre) }),
    metresPerUnit,
    scale: { metres, length: round(metres * perMetre) },
  };
}
