/**
 * Every route parameter that names something on the file system (or in the trace store),
 * as one line each: adding a route to the adversarial matrices is adding a line here.
 */
import { turn } from './security-harness.js';

export interface TargetRequest {
  method: 'GET' | 'POST';
  /** Sent byte for byte (`exactRequest`), never normalised. */
  path: string;
  body?: Record<string, unknown>;
}

export interface IdTarget {
  /** e.g. `POST /compile body.worker`. */
  label: string;
  /** The request carrying `value` (already decoded: the text the route's schema sees). */
  request(value: string): TargetRequest;
  /** The request with `encoded` placed verbatim in the URL; absent for body fields. */
  rawPath?(encoded: string): string;
  /**
   * True where an unusable value must not fail the call (a call link's topicId):
   * the answer is a 200 with the generic context and a `topic-unsafe:` warning, and nothing
   * is read for it. Everywhere else an unsafe value is a 400/404 problem.
   */
  connects?: boolean;
}

const bodyField = (url: string, field: string, base: () => Record<string, unknown>): IdTarget => ({
  label: `POST ${url} body.${field}`,
  request: (value) => ({ method: 'POST', path: url, body: { ...base(), [field]: value } }),
});

const queryParam = (url: string, param: string): IdTarget => ({
  label: `GET ${url}?${param}`,
  request: (value) => ({ method: 'GET', path: `${url}?${param}=${encodeURIComponent(value)}` }),
  rawPath: (encoded) => `${url}?${param}=${encoded}`,
});

const pathParam = (template: string, name: string): IdTarget => ({
  label: `GET ${template.replace('{}', `:${name}`)}`,
  request: (value) => ({ method: 'GET', path: template.replace('{}', encodeURIComponent(value)) }),
  rawPath: (encoded) => template.replace('{}', encoded),
});

export const ID_TARGETS: IdTarget[] = [
  bodyField('/compile', 'worker', () => turn()),
  bodyField('/compile', 'channelId', () => turn()),
  bodyField('/compile', 'runId', () => turn()),
  // workers/<worker>/roles/<role>.md
  bodyField('/compile', 'role', () => turn()),
  pathParam('/runs/{}/trace', 'runId'),
  queryParam('/runs', 'worker'),
  queryParam('/runs', 'persona'),
  pathParam('/context/{}', 'persona'),
  { ...queryParam('/context/mars', 'topicId'), connects: true },
  { ...queryParam('/context/venus', 'topicId'), connects: true },
  queryParam('/context/mars', 'runId'),
  pathParam('/context/topic/{}', 'topicId'),
  queryParam('/context/topic/real-estate', 'runId'),
  pathParam('/ui/{}', 'file'),
];

/**
 * Values no identifier may take, as the route sees them after URL decoding:
 * parent segments, literal and double-encoded dots, backslashes, absolute paths, NUL
 * bytes, Unicode look-alikes of `.` and `/`, line breaks, and over-long ids.
 */
export const TRAVERSAL_VALUES: string[] = [
  '..',
  '../..',
  '../../../../../../../../etc/passwd',
  '../workers/scribe',
  'scribe/../scribe',
  './scribe',
  '.',
  '...',
  '..\\..\\windows\\win.ini',
  'scribe\\..\\..',
  '/etc/passwd',
  '//etc/passwd',
  'C:\\Windows\\System32',
  'file:///etc/passwd',
  '%2e%2e',
  '%2e%2e%2f%2e%2e',
  '%252e%252e',
  '%252e%252e%252fetc%252fpasswd',
  '..%c0%af',
  '..%00',
  'scribe\u0000',
  '\u0000',
  'scribe\u0000/../../etc/passwd',
  '\uff0e\uff0e',
  '\uff0e\uff0e\uff0f\uff0e\uff0e',
  '\u2025',
  '\u2024\u2024',
  '..\u2215..',
  '\u2215etc\u2215passwd',
  '..\u29f5..',
  '\ufe52\ufe52',
  'scribe\n',
  'scribe\r\nX-Injected: 1',
  ' scribe',
  '\u202escribe',
  'scribe\u200b',
  'a'.repeat(129),
  'a'.repeat(5000),
  '',
];

/** Forms placed verbatim in a URL (path or query), so the server does the decoding. */
export const RAW_URL_FORMS: string[] = [
  '..',
  '%2e%2e',
  '%2E%2E',
  '.%2e',
  '%252e%252e',
  '..%2f..%2fetc%2fpasswd',
  '%2e%2e%5c%2e%2e',
  '..%5c..',
  '%00',
  'a%00b',
  '%c0%ae%c0%ae',
  '%ef%bc%8e%ef%bc%8e',
  '%e2%80%a5',
  '..%e2%88%95..',
  '%2f%2fetc%2fpasswd',
  '..;',
  '..%3b',
  'scribe%0d%0aX:%20y',
  '%',
  '%zz',
  `${'a'.repeat(600)}`,
];
