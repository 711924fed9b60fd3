import assert from 'node:assert/strict';
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from 'parse-prometheus-text-format';

export type Scrape = Map<string, ParsedFamily>;

/**
 * A scrape parsed by a Prometheus text-format parser (never by regexes), by family name. The parser
 * merges every sample of a histogram into one, losing their labels, so each histogram is parsed a
 * second time as untyped samples: its `_bucket`, `_sum` and `_count` lines are then families of
 * their own, each sample with its labels (`le` included). `types` keeps what the TYPE lines said.
 */
export function parseScrape(text: string): Scrape & { types: Map<string, string> } {
  const typed = parsePrometheusTextFormat(text);
  const types = new Map(typed.map((f) => [f.name, f.type]));
  const histograms = typed.filter((f) => f.type === 'HISTOGRAM').map((f) => f.name);
  const untypedText = text.split('\n').filter((line) => !histograms.some((name) => line === `# TYPE ${name} histogram`)).join('\n');
  // Untyped, a histogram's lines of one name come in several runs (one per label set): merged here.
  const families = new Map<string, ParsedFamily>();
  for (const f of parsePrometheusTextFormat(untypedText)) {
    const seen = families.get(f.name);
    if (seen === undefined) families.set(f.name, { ...f, metrics: [...f.metrics] });
    else seen.metrics.push(...f.metrics);
  }
  return Object.assign(families, { types });
}

export function family(scrape: Scrape, name: string): ParsedFamily {
  const found = scrape.get(name);
  assert.ok(found, `the scrape has ${name}`);
  return found;
}

/** The samples of a family whose labels include `labels`. */
export function samples(scrape: Scrape, name: string, labels: Record<string, string> = {}): ParsedSample[] {
  return family(scrape, name).metrics.filter((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
}

/** The sum of the values of those samples; 0 if none. */
export function sampleValue(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  return samples(scrape, name, labels).reduce((sum, s) => sum + Number(s.value), 0);
}

/** A series' identity: its sample name and its labels, in a stable order. */
const seriesKey = (name: string, labels: Record<string, string> = {}) => `${name}${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;

/**
 * Every series of a scrape whose value may only grow while the process that exports it lives:
 * counters, and histograms' and summaries' _bucket, _sum and _count. Keyed by seriesKey.
 */
export function counterSeries(scrape: Scrape & { types: Map<string, string> }): Map<string, number> {
  const names: string[] = [];
  for (const [name, type] of scrape.types) {
    if (type === 'COUNTER') names.push(name);
    if (type === 'HISTOGRAM') names.push(`${name}_bucket`, `${name}_sum`, `${name}_count`);
    if (type === 'SUMMARY') names.push(`${name}_sum`, `${name}_count`);
  }
  const series = new Map<string, number>();
  for (const name of names) {
    for (const sample of scrape.get(name)?.metrics ?? []) series.set(seriesKey(name, sample.labels), Number(sample.value));
  }
  return series;
}

/**
 * What Prometheus' `sum(increase(name{labels}[range]))` says over a range whose first and last
 * samples are the first and last of `scrapes` (so no extrapolation): per series, the rises between
 * consecutive scrapes, where a drop is a counter reset and the new value counts from zero. Series
 * are those the first scrape has (a series that appears later has no earlier sample to rise from).
 */
export function increase(scrapes: ReadonlyArray<Scrape>, name: string, labels: Record<string, string> = {}): number {
  const first = scrapes[0];
  assert.ok(first, 'at least one scrape');
  let total = 0;
  for (const sample of samples(first, name, labels)) {
    let previous = Number(sample.value);
    for (const scrape of scrapes.slice(1)) {
      const same = scrape.get(name)?.metrics.find((s) => seriesKey(name, s.labels) === seriesKey(name, sample.labels));
      if (same === undefined) continue; // no sample in this scrape (a failed or partial one)
      const value = Number(same.value);
      total += value >= previous ? value - previous : value;
      previous = value;
    }
  }
  return total;
}

/** The counter series that dropped from one scrape to a later one, or vanished: each is read by Prometheus as a reset. */
export function counterDrops(scrapes: ReadonlyArray<Scrape & { types: Map<string, string> }>): string[] {
  const drops: string[] = [];
  const seen = new Map<string, number>();
  scrapes.forEach((scrape, i) => {
    const now = counterSeries(scrape);
    for (const [key, before] of seen) {
      const value = now.get(key);
      if (value === undefined) {
        drops.push(`${key} vanished at scrape ${i}`);
        seen.delete(key);
      } else if (value < before) drops.push(`${key} dropped ${before} -> ${value} at scrape ${i}`);
    }
    for (const [key, value] of now) seen.set(key, value);
  });
  return drops;
}
