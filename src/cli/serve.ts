import { loadConfig } from '../config/index.js';
import { hostForCountry } from '../core/countries.js';
import { ensureDemo } from '../demo/demo-data.js';
import { createService } from '../service.js';
import { curlLine } from './commands.js';

/**
 * `serve`: migrations, then the API in the foreground until SIGINT/SIGTERM, then a graceful
 * shutdown (in-flight requests finish). `--demo` (what `npm start` runs) first makes sure the demo
 * data exists and prints a fresh key with a curl line that works.
 */
export async function serveCommand(opts: { demo?: boolean }): Promise<void> {
  const config = loadConfig();
  const service = await createService(config);
  const say = (text: string) => process.stdout.write(`${text}\n`);

  if (opts.demo) {
    const demo = await ensureDemo(service.store, new Date());
    say(demo.created ? '\nCreated the demo data set.' : '\nUsing the existing demo data set.');
    say(`Demo API key (sg, shown once):  ${demo.key}`);
    say(`Try:  ${curlLine(config, demo.key)}\n`);
  }

  await service.listen();
  const port = config.port === 80 ? '' : `:${config.port}`;
  say(`Listings API listening on ${config.host}:${config.port}; countries ${config.countries.join(', ')}, e.g. http://${hostForCountry(config.countries[0]!, config.apiDomain)}${port}/v1/listings`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    service.logger.info({ signal }, 'shutting down: finishing in-flight requests');
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        service.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}
