import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** nginx's binary where Debian and a source build put it; undefined when it is not installed. */
export const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx'].find((path) => existsSync(path));

/**
 * The smallest main configuration around `site` (a server block and its upstream) that runs
 * unprivileged in `dir`: its pid, error log and temporary paths there. `http` goes first in the
 * http block (the access log); `workerConnections` sizes the one worker.
 */
export function unprivilegedNginxConfig(dir: string, site: string, options: { workerConnections: number; http: string }): string {
  return `
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
worker_processes 1;
events { worker_connections ${options.workerConnections}; }
http {
  ${options.http}
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
${site}
}
`;
}
