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
