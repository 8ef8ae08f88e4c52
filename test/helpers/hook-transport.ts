import { request } from 'node:http';
import type { HookTransport } from '../../shared/webhooks/transport.ts';

/** Posts to 127.0.0.1 only: anything else is refused before a socket opens. */
export function loopbackTransport(): HookTransport {
  return (hookRequest) =>
    new Promise((resolve, reject) => {
      const url = new URL(hookRequest.url);
      if (url.hostname !== '127.0.0.1') return reject(new Error(`not loopback: ${url.hostname}`));
      const req = request(
        url,
        { method: 'POST', headers: hookRequest.headers, timeout: hookRequest.timeoutMs },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        },
      );
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end(hookRequest.body);
    });
}
