// The container HEALTHCHECK: exit 0 when GET /healthz answers 200 {"status":"ok"} within
// the timeout, 1 otherwise (Docker reserves 2). Slim images have no curl, and undici is
// already a production dependency. /healthz is public, so no token is needed or sent.
//
// HEALTHCHECK_URL overrides the target; otherwise it is /healthz on this container's PORT.
// HEALTHCHECK_TIMEOUT_MS (default 2000) bounds connect, headers and body together.
import { request } from 'undici';

const timeoutMs = positiveInteger(process.env.HEALTHCHECK_TIMEOUT_MS) ?? 2000;
const url = process.env.HEALTHCHECK_URL || `http://${probeHost(process.env.HOST)}:${process.env.PORT || '8080'}/healthz`;

process.exit(await probe());

async function probe() {
  try {
    const { statusCode, body } = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json' },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await body.text();
    if (statusCode === 200 && parseStatus(text) === 'ok') {
      process.stdout.write(`healthy: ${url} answered 200\n`);
      return 0;
    }
    const what = statusCode === 200 ? '200 without {"status":"ok"}' : String(statusCode);
    process.stderr.write(`unhealthy: ${url} answered ${what}\n`);
  } catch (error) {
    const reason = error?.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (error?.code ?? error?.name ?? 'error');
    process.stderr.write(`unhealthy: ${url}: ${reason}\n`);
  }
  return 1;
}

/** The server binds a wildcard inside the container; probe it over loopback. */
function probeHost(host) {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function parseStatus(text) {
  try {
    return JSON.parse(text)?.status;
  } catch {
    return undefined;
  }
}

function positiveInteger(text) {
  return text && /^\d+$/.test(text) && Number(text) > 0 ? Number(text) : undefined;
}
