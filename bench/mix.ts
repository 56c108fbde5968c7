/**
 * The mixed distinct-input load (issue 25): every request is one the service has not seen,
 * spread over the four routes the way a busy deployment spreads them, so no memo ever hits
 * and each per-input memo (the compile memo, a zone's formatters, a topic name's block)
 * would grow without bound if it were bounded by entries rather than bytes.
 *
 *   70 % POST /compile, each with a unique message and runId
 *   10 % GET /context/mars, each at a unique minute
 *   10 % GET /context/venus with a randomly cased valid time zone
 *   10 % GET /context/topic/<topic> with a unique topicName
 */

export interface MixRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface MixInputs {
  token: string;
  /** The compile body every POST starts from (its message gets a unique suffix). */
  compileBody: Record<string, unknown>;
  /** A persona route's `now` for the i-th distinct minute. */
  minuteAt: (i: number) => string;
  /** A topic the brain holds. */
  topicId: string;
  /** Seeds the choice of route and the casing, so two runs send the same sequence. */
  seed: string;
}

/** Zones Intl knows under any casing; each request cases one of them at random. */
const ZONES = ['America/Los_Angeles', 'America/New_York', 'Europe/London', 'Europe/Berlin', 'Asia/Tokyo', 'Australia/Sydney', 'America/Sao_Paulo', 'Africa/Nairobi'];

/** mulberry32: a small seeded generator, so the mix is the same sequence on every run. */
function seededRandom(seed: string): () => number {
  let state = 0;
  for (let i = 0; i < seed.length; i++) state = (Math.imul(state ^ seed.charCodeAt(i), 2654435761) + i) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomCase(text: string, random: () => number): string {
  let out = '';
  for (const char of text) out += random() < 0.5 ? char.toLowerCase() : char.toUpperCase();
  return out;
}

/** Returns the next request of the mix on every call. */
export function mixedRequests(inputs: MixInputs): () => MixRequest {
  const random = seededRandom(inputs.seed);
  const auth = { authorization: `Bearer ${inputs.token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const message = String(inputs.compileBody['message']);
  let i = 0;
  return () => {
    const n = i++;
    const pick = random();
    if (pick < 0.7) {
      const body = { ...inputs.compileBody, message: `${message} (turn ${n})`, runId: `mix-${n}` };
      return { method: 'POST', path: '/compile', headers: json, body: JSON.stringify(body) };
    }
    if (pick < 0.8) return { method: 'GET', path: `/context/mars?now=${inputs.minuteAt(n)}`, headers: auth };
    if (pick < 0.9) {
      const zone = randomCase(ZONES[Math.floor(random() * ZONES.length)]!, random);
      return { method: 'GET', path: `/context/venus?timezone=${encodeURIComponent(zone)}`, headers: auth };
    }
    return { method: 'GET', path: `/context/topic/${inputs.topicId}?topicName=${encodeURIComponent(`Garden plan ${n}`)}`, headers: auth };
  };
}
