/**
 * The service's `toAscii` (src/core/text.ts), for the viewer: a persona answer's
 * `session.instructions` are the delivered instructions made realtime-safe ASCII, and the
 * viewer rebuilds that session from the trace. The viewer is built alone (ui/tsconfig.json),
 * so this is a copy; test/ui/ascii.test.ts holds it to the service's function.
 */

const ASCII_MAP: Record<string, string> = {
  '\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2014': '--', '\u2015': '--',
  '\u2212': '-', '\u2043': '-', '\u00ad': '',
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'", '\u00b4': "'",
  '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u201f': '"', '\u2033': '"', '\u00ab': '"', '\u00bb': '"',
  '\u2039': "'", '\u203a': "'",
  '\u2026': '...', '\u2022': '-', '\u2023': '-', '\u25e6': '-', '\u00b7': '-', '\u25aa': '-', '\u25cf': '-',
  '\u2192': '->', '\u2190': '<-', '\u2194': '<->', '\u21d2': '=>', '\u21d0': '<=', '\u21d4': '<=>',
  '\u2264': '<=', '\u2265': '>=', '\u2260': '!=', '\u00d7': 'x', '\u00f7': '/', '\u00b1': '+/-',
  '\u00a0': ' ', '\u202f': ' ', '\u2007': ' ', '\u2009': ' ', '\u200a': ' ', '\u3000': ' ',
  '\u200b': '', '\u200c': '', '\u200d': '', '\u2060': '', '\ufeff': '',
  '\u00a9': '(c)', '\u00ae': '(R)', '\u2122': '(TM)', '\u00b0': ' degrees',
  '\u20ac': 'EUR ', '\u00a3': 'GBP ', '\u00a5': 'JPY ', '\u2044': '/', '\u00bd': '1/2', '\u00bc': '1/4', '\u00be': '3/4',
  '\u00df': 'ss', '\u00e6': 'ae', '\u00c6': 'AE', '\u0153': 'oe', '\u0152': 'OE', '\u00f8': 'o', '\u00d8': 'O',
  '\u0142': 'l', '\u0141': 'L', '\u0111': 'd', '\u0110': 'D', '\u00f0': 'd', '\u00fe': 'th', '\u00de': 'Th',
  '\u2713': 'v', '\u2714': 'v', '\u2717': 'x', '\u2718': 'x',
};

const MAPPED = new RegExp(`[${Object.keys(ASCII_MAP).filter((key) => key.length === 1).join('').replace(/[\]\\^-]/g, '\\$&')}]`, 'g');
const COMBINING_MARKS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;

/** Typographic Unicode transliterated to ASCII, the rest outside ASCII dropped; byte for byte the service's. */
export function toAscii(text: string): string {
  if (/^[\u0000-\u007f]*$/.test(text)) return text;
  const mapped = text.replace(MAPPED, (char) => ASCII_MAP[char] ?? '');
  const decomposed = mapped.normalize('NFKD').replace(COMBINING_MARKS, '');
  const remapped = decomposed.replace(MAPPED, (char) => ASCII_MAP[char] ?? '');
  return remapped.replace(/( ?)[^\u0000-\u007f]+( ?)/g, (_match, before: string, after: string) => (before && after ? ' ' : before || after));
}
