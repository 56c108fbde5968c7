import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

/** Bump when the generated content changes, so a cached brain from an older harness is rebuilt. */
export const GENERATOR_VERSION = 1;
export const MANIFEST_FILE = '.bench-brain.json';
export const DEFAULT_SEED = 'context-compiler-bench';
/** The brain's "today"; fixed so the brain is the same bytes on every machine and every day. */
export const DEFAULT_END_DATE = '2026-11-30';
export const BRAIN_TIMEZONE = 'America/Los_Angeles';

export interface BrainOptions {
  seed?: string;
  /** 1 = the full 10,000-file brain; tests use a small fraction. */
  scale?: number;
  endDate?: string;
}

export interface BrainFile {
  path: string;
  content: string;
}

export interface BrainManifest {
  generatorVersion: number;
  seed: string;
  scale: number;
  endDate: string;
  timezone: string;
  totalFiles: number;
  totalBytes: number;
  /** sha256 over every path and content, in path order. */
  sha256: string;
  counts: Record<string, number>;
  workers: string[];
  channels: string[];
  /** A topic of ordinary size and the largest one, for requests that need an existing id. */
  topics: { typical: string; largest: string; largestBytes: number };
}

export interface BrainPlan {
  files: BrainFile[];
  manifest: BrainManifest;
}

const TOTAL_FILES = 10_000;
const MEMORY_DAYS = 730;
const MEETINGS = 1_000;
const TOPICS = 600;
const COMPANIES = 2_300;

/** sfc32 seeded through cyrb128: small, fast and identical on every platform. */
function createRandom(seed: string) {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < seed.length; i++) {
    const k = seed.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  let a = (h1 ^ h2 ^ h3 ^ h4) >>> 0;
  let b = (h2 ^ h1) >>> 0;
  let c = (h3 ^ h1) >>> 0;
  let d = (h4 ^ h1) >>> 0;
  const next = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 15; i++) next();
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const chance = (p: number) => next() < p;
  const digits = (n: number) => Array.from({ length: n }, () => int(0, 9)).join('');
  const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[int(0, 15)]).join('');
  return { next, int, pick, chance, digits, hex };
}

type Random = ReturnType<typeof createRandom>;

const FIRST_NAMES = [
  'Alex', 'Jordan', 'Priya', 'Sam', 'Morgan', 'Taylor', 'Casey', 'Riley', 'Jamie', 'Avery', 'Quinn', 'Rowan',
  'Noah', 'Emma', 'Liam', 'Olivia', 'Mateo', 'Sofia', 'Arjun', 'Mei', 'Kenji', 'Aisha', 'Omar', 'Fatima',
  'Lucas', 'Chloe', 'Ethan', 'Zoe', 'Hugo', 'Ines', 'Tomas', 'Lena', 'Nikolai', 'Anya', 'Diego', 'Camila',
  'Wei', 'Lin', 'Yuki', 'Hana', 'Kwame', 'Ama', 'Tariq', 'Leila', 'Oskar', 'Freya', 'Malik', 'Nadia',
  'Gabriel', 'Julia', 'Felix', 'Clara', 'Rafael', 'Marta', 'Samir', 'Yara', 'Theo', 'Iris', 'Elijah', 'Maya',
  'Dev', 'Anjali', 'Bruno', 'Elena', 'Kofi', 'Esi', 'Ravi', 'Sana', 'Jonas', 'Greta', 'Pablo', 'Lucia',
  'Ibrahim', 'Amira', 'Henrik', 'Astrid', 'Marco', 'Giulia', 'Sean', 'Niamh',
] as const;

const LAST_NAMES = [
  'Lee', 'Patel', 'Nguyen', 'Garcia', 'Smith', 'Kim', 'Chen', 'Okafor', 'Silva', 'Müller', 'Rossi', 'Novak',
  'Haddad', 'Cohen', 'Sato', 'Tanaka', 'Kowalski', 'Andersen', 'Johansson', 'Dubois', 'Moreau', 'Fischer',
  'Weber', 'Costa', 'Santos', 'Ibrahim', 'Mensah', 'Owusu', 'Reyes', 'Cruz', 'Morales', 'Ortiz', 'Khan',
  'Ahmed', 'Hussain', 'Singh', 'Sharma', 'Gupta', 'Iyer', 'Rao', 'Walker', 'Wright', 'Hughes', 'Evans',
  'Murphy', 'Kelly', 'Byrne', 'Walsh', 'Brennan', 'Larsen', 'Berg', 'Lund', 'Virtanen', 'Korhonen', 'Horvat',
  'Kovacs', 'Nagy', 'Popescu', 'Ionescu', 'Petrov', 'Ivanova', 'Volkov', 'Yilmaz', 'Demir', 'Kaya', 'Abe',
  'Park', 'Choi', 'Wong', 'Lim', 'Tan', 'Goh', 'Hall', 'Young', 'Allen', 'King', 'Scott', 'Green', 'Baker', 'Adams',
] as const;

const COMPANY_HEADS = [
  'North', 'Blue', 'Iron', 'Silver', 'Green', 'Bright', 'Cedar', 'Harbor', 'Summit', 'River', 'Stone', 'Oak',
  'Pine', 'Maple', 'Copper', 'Golden', 'Clear', 'Swift', 'True', 'Open', 'Red', 'Lumen', 'Nova', 'Terra',
  'Atlas', 'Orbit', 'Quartz', 'Vector', 'Pixel', 'Beacon', 'Anchor', 'Falcon', 'Willow', 'Birch', 'Aspen',
  'Cobalt', 'Indigo', 'Crimson', 'Amber', 'Jade', 'Coral', 'Delta', 'Echo', 'Polar', 'Solar', 'Lunar',
  'Granite', 'Meadow', 'Prairie', 'Canyon',
] as const;

const COMPANY_TAILS = [
  'wind', 'field', 'works', 'labs', 'logistics', 'systems', 'partners', 'bank', 'foods', 'studio', 'health',
  'energy', 'freight', 'analytics', 'robotics', 'media', 'capital', 'clinic', 'dental', 'realty', 'insurance',
  'telecom', 'software', 'design', 'supply', 'motors', 'airlines', 'hotels', 'books', 'coffee', 'bakery',
  'furniture', 'garden', 'legal', 'accounting', 'security', 'cloud', 'networks', 'pharma', 'outdoors',
] as const;

const TOPIC_HEADS = [
  'real', 'studio', 'garden', 'travel', 'family', 'health', 'money', 'career', 'house', 'car', 'school', 'book',
  'music', 'fitness', 'kitchen', 'wedding', 'tax', 'visa', 'insurance', 'holiday', 'office', 'startup',
  'reading', 'pottery', 'running', 'climbing', 'cycling', 'language', 'piano', 'volunteer',
] as const;

const TOPIC_TAILS = [
  'estate', 'lease', 'plans', 'budget', 'renovation', 'search', 'review', 'trip', 'notes', 'project', 'goals',
  'ideas', 'decisions', 'research', 'schedule', 'shopping', 'repairs', 'paperwork', 'move', 'routine',
] as const;

const POSITIVE = [
  'grateful', 'happy', 'calm', 'proud', 'excited', 'relieved', 'hopeful', 'peaceful', 'content', 'joyful',
  'energised', 'confident', 'loved', 'inspired', 'thankful',
] as const;

const NEGATIVE = [
  'anxious', 'tired', 'frustrated', 'worried', 'nervous', 'sad', 'overwhelmed', 'lonely', 'angry', 'annoyed',
  'exhausted', 'stressed', 'afraid', 'disappointed', 'restless', 'guilty', 'hurt',
] as const;

const SUBJECTS = [
  'the studio lease', 'the roadmap presentation', 'the garden plans', 'the quarterly report', 'the move',
  'the visa paperwork', 'the new desk', 'the team offsite', 'the dentist appointment', 'the tax return',
  'the car repair', 'the piano lessons', 'the kitchen renovation', 'the hiring loop', 'the budget review',
  'the release freeze', 'the migration', 'the birthday dinner', 'the trip to Lisbon', 'the insurance claim',
] as const;

const SYSTEMS = ['cache', 'search index', 'billing job', 'auth service', 'build pipeline', 'backup script', 'home server', 'sync daemon'] as const;
const ISSUES = ['invalidation bug', 'memory leak', 'flaky test', 'timeout', 'race condition', 'slow query', 'disk alert'] as const;
const ITEMS = ['desk', 'monitor', 'chair', 'headphones', 'bike light', 'raised bed kit', 'kettle', 'bookshelf'] as const;
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'] as const;
const MEETING_KINDS = [
  'platform-sync', 'roadmap-review', 'design-critique', 'hiring-debrief', 'budget-review', 'one-on-one',
  'retro', 'planning', 'incident-review', 'customer-call', 'vendor-check-in', 'board-prep', 'offsite-planning',
  'security-review', 'launch-readiness',
] as const;

const CHANNELS: Record<string, string> = {
  general: 'General conversation with Alex: quick questions, drafting, thinking out loud.',
  'ops-alerts': 'Operational alerts from the home server. Summarise each alert in one sentence and say whether Alex needs to act.',
  family: 'Family logistics: school pick-ups, birthdays, visits, and the shared calendar.',
  research: 'Long-running research threads; cite the source of every claim and say when something is uncertain.',
  travel: 'Trips being planned or under way: bookings, connections, documents, and what to pack.',
  finance: 'Household finance: bills, budgets, tax paperwork. Never move money; only summarise and remind.',
};

const WORKERS: Record<string, string> = {
  scribe: 'a careful writing assistant for Alex. You turn rough notes into clear, short prose and keep Alex\'s voice: plain words, short sentences, no hype.',
  archivist: 'the brain\'s archivist. You file meeting notes, link people and companies, and keep the brain tidy without deleting anything.',
  researcher: 'a patient research assistant. You gather sources, compare them, and say plainly what is known, what is disputed and what is missing.',
  concierge: 'a logistics concierge. You book nothing yourself; you draft options, compare prices and deadlines, and hand Alex one clear recommendation.',
};

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

function addDays(isoDate: string, days: number): string {
  const date = new Date(`${isoDate}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
}

function weekday(isoDate: string): string {
  return WEEKDAYS[(new Date(`${isoDate}T00:00:00Z`).getUTCDay() + 6) % 7]!;
}

function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** The PII and PII-lookalike shapes the scrubber must get right, in realistic sentences. */
function shapes(r: Random, endDate: string) {
  const person = () => `${r.pick(FIRST_NAMES)} ${r.pick(LAST_NAMES)}`;
  const email = (name = person()) =>
    `${slugify(name).replace('-', r.pick(['.', '_', '']))}@${r.pick(['example.org', 'example.com', 'mail.example.net'])}`;
  const phone = () =>
    r.pick([
      () => `+44 20 7946 0${r.digits(3)}`,
      () => `(415) 555-01${r.digits(2)}`,
      () => `415.555.01${r.digits(2)}`,
      () => `+1 415 555 01${r.digits(2)}`,
      () => `+49 30 901820${r.digits(2)}`,
      () => `020 7946 0${r.digits(3)}`,
    ])();
  const date = () => addDays(endDate, -r.int(0, 400));
  const time = () => `${pad(r.int(7, 20))}:${r.pick(['00', '15', '30', '45'])}`;
  const version = () => `${r.int(1, 4)}.${r.int(0, 30)}.${r.int(0, 12)}`;
  const order = () => `Order #${r.digits(5)}`;
  const issue = () => r.pick([`#${r.int(100, 9999)}`, `OPS-${r.int(100, 9999)}`, `INV-${r.int(2024, 2026)}-${r.digits(4)}`]);
  const url = () =>
    r.pick([
      `https://shop.example.com/orders/${r.hex(20)}`,
      `https://docs.example.com/d/${r.hex(32)}/edit`,
      `https://tracking.example.net/t/1Z${r.digits(16)}`,
      `https://meet.example.com/${r.hex(3)}-${r.hex(4)}-${r.hex(3)}`,
    ]);
  return { person, email, phone, date, time, version, order, issue, url };
}

function memoryLine(r: Random, s: ReturnType<typeof shapes>): string {
  if (r.chance(0.38)) {
    const feel = r.chance(0.5) ? r.pick(POSITIVE) : r.pick(NEGATIVE);
    return r.pick([
      () => `Felt ${feel} about ${r.pick(SUBJECTS)} today.`,
      () => `Woke up ${r.pick(NEGATIVE.slice(0, 8))} and a bit ${r.pick(NEGATIVE.slice(8))}; the week filled up with errands.`,
      () => `Dinner with ${r.pick(FIRST_NAMES)}. We laughed a lot; I'm ${r.pick(POSITIVE)} and ${r.pick(POSITIVE)} about how ${r.pick(SUBJECTS)} turned out.`,
      () => `Still ${feel} about ${r.pick(SUBJECTS)}; I keep going back and forth and it is exhausting.`,
      () => `Call with ${r.pick(FIRST_NAMES)} about ${r.pick(SUBJECTS)}. I felt ${r.pick(NEGATIVE)} at first, but ${r.pick(POSITIVE)} by the end.`,
      () => `Grateful for a slow afternoon and a long walk by the river.`,
      () => `Noticed I was ${r.pick(NEGATIVE)} before the ${s.time()} meeting and said so instead of going quiet.`,
      () => `${r.pick(FIRST_NAMES)} said something kind about my work; I felt ${r.pick(POSITIVE)} all evening.`,
    ])();
  }
  return r.pick([
    () => `Spent ${r.int(1, 4)} hours on the ${r.pick(SYSTEMS)} ${r.pick(ISSUES)}; version ${s.version()} should fix it.`,
    () => `${s.order()} for the new ${r.pick(ITEMS)} shipped; tracking at ${s.url()}.`,
    () => `${s.person()} emailed from ${s.email()} about ${r.pick(SUBJECTS)}.`,
    () => `${r.pick(FIRST_NAMES)} called from ${s.phone()} while I was out; call back about ${r.pick(SUBJECTS)}.`,
    () => `Reminder: review of ${r.pick(SUBJECTS)} on ${s.date()} ${s.time()}.`,
    () => `Filed issue ${s.issue()} for the ${r.pick(SYSTEMS)}; notes at ${s.url()}.`,
    () => `Deployed ${r.pick(SYSTEMS)} ${s.version()} to staging; the cache warmed in ${r.int(2, 40)} minutes.`,
    () => `The heartbeat monitor on the ${r.pick(SYSTEMS)} flapped ${r.int(2, 9)} times overnight.`,
    () => `Worked on the presentation for ${r.pick(WEEKDAYS)}; slides ${r.int(4, 30)} to ${r.int(31, 60)} still rough.`,
    () => `Groceries, laundry, and ${r.int(20, 90)} minutes of reading.`,
    () => `Paid invoice ${s.issue()} (${r.int(20, 900)}.${pad(r.int(0, 99))} EUR).`,
    () => `Standup at ${s.time()}: ${r.pick(SYSTEMS)} work continues, no blockers.`,
    () => `Booked ${r.pick(['the dentist', 'a haircut', 'the car service', 'the vet'])} for ${s.date()} at ${s.time()}.`,
  ])();
}

function paragraph(r: Random, sentences: readonly string[], count: number): string {
  return Array.from({ length: count }, () => r.pick(sentences)).join(' ');
}

function soul(r: Random): string {
  const inner = [
    'I am happiest when I am building something slowly and carefully with people I trust.',
    'I get anxious when too many promises pile up at once, and I tend to go quiet instead of asking for help.',
    'Long walks by the river reset me.',
    'I want my work to make other people\'s days calmer, not louder.',
    'I notice that I rush when I am tired, and that rushing is where most of my mistakes come from.',
    'Mornings are mine; I protect the first hour for thinking and writing.',
    'I am proud of the garden and of the friendships I kept through hard years.',
    'I can be stubborn about small things and too easy-going about big ones.',
    'Music helps when words do not; the piano is where I go when I am sad.',
    'I feel lonely in crowded rooms and at home in small conversations.',
  ];
  const sections: string[] = ['# Soul', '', paragraph(r, inner, 6), ''];
  sections.push('## Values', '');
  for (const value of [
    'Honesty over comfort, kindness in how it is said.',
    'Finish what I start; say no early rather than late.',
    'Curiosity first: ask one more question before deciding.',
    'Leave people and places a little better than I found them.',
    'Rest is part of the work, not a reward for it.',
  ]) sections.push(`- ${value}`);
  sections.push('', '## What I am working on in myself', '');
  sections.push(
    paragraph(r, [
      'Letting a conversation end without having to fix it.',
      'Noticing when I am tired before it turns into frustration.',
      'Celebrating small wins instead of rushing to the next thing.',
      'Asking for help the first time I need it, not the third.',
      'Saying what I feel in the moment rather than a week later.',
      'Being gentle with myself when a plan falls apart.',
    ], 5),
    '',
  );
  sections.push('## People who matter', '');
  for (let i = 0; i < 6; i++) sections.push(`- ${r.pick(FIRST_NAMES)}: ${r.pick(['my oldest friend', 'my sister', 'a mentor from my first job', 'my neighbour and gardening partner', 'a cousin abroad', 'my running partner'])}.`);
  sections.push('', '## Fears and hopes', '');
  let text = sections.join('\n');
  while (Buffer.byteLength(text) < 3000) text += `${paragraph(r, inner, 3)}\n\n`;
  return `${text.trimEnd()}\n`;
}

function tasks(r: Random, s: ReturnType<typeof shapes>, scale: number): string {
  const sections = ['P0 — Urgent', 'P1 — Soon', 'Today', 'This week', 'Later', 'Someday'];
  const verbs = ['Answer', 'Send', 'Call', 'Book', 'Renew', 'Review', 'Draft', 'Fix', 'Sort', 'Plan', 'Pay', 'Read', 'Email', 'Order', 'Schedule'];
  const markers = [' P0', ' P1', ' P2', ' P3', ' !high', ' !low', ' (priority: high)', ' (priority: low)', ''];
  const lines = ['# Open tasks', ''];
  const total = Math.max(12, Math.round(200 * scale));
  let id = 1;
  for (let index = 0; index < sections.length; index++) {
    lines.push(`## ${sections[index]}`, '');
    const count = Math.ceil(total / sections.length);
    for (let i = 0; i < count; i++) {
      const title = `${r.pick(verbs)} ${r.pick(SUBJECTS)}`;
      const marker = markers[(id + index) % markers.length]!;
      const done = r.chance(0.12) ? 'x' : ' ';
      const comment = r.chance(0.3) ? ` <!-- id: t-${id} -->` : '';
      const note = r.pick([
        () => ` — deadline ${r.pick(WEEKDAYS)}`,
        () => ` — ask ${r.pick(FIRST_NAMES)} (${s.email()})`,
        () => ` — call ${s.phone()} before ${s.time()}`,
        () => ` — see ${s.url()}`,
        () => ` — ${s.order()} arrived damaged`,
        () => '',
      ])();
      lines.push(
        r.chance(0.35) ? `- [${done}] **${title}**${note}${marker}${comment}` : `- [${done}] ${title}${note}${marker}${comment}`,
      );
      if (r.chance(0.15)) lines.push(`  - ${r.pick(['ask about the details', 'check the receipt first', 'bring the paperwork', 'needs a second opinion'])}`);
      id++;
    }
    lines.push('');
    if (index === 3) lines.push('---', '');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

function calendar(r: Random, s: ReturnType<typeof shapes>, endDate: string): string {
  const titles = [
    'Standup with the platform team', 'Roadmap presentation (room 4B)', 'Team lunch', 'Dentist', 'Pottery class',
    'School pick-up', 'Focus block: quarterly report', 'Vendor call with Northwind', 'Run by the river', 'Piano lesson',
  ];
  const hours = new Set<number>();
  while (hours.size < 8) hours.add(r.int(7, 20));
  const lines = [`# Today — ${endDate}`, ''];
  for (const hour of [...hours].sort((a, b) => a - b)) {
    const extra = r.chance(0.2) ? ` — call ${s.phone()} if the link fails` : r.chance(0.2) ? ` — ${s.url()}` : '';
    lines.push(`- ${pad(hour)}:${r.pick(['00', '30'])} ${r.pick(titles)}${extra}`);
  }
  return `${lines.join('\n')}\n`;
}

function inbox(r: Random, s: ReturnType<typeof shapes>, scale: number): string {
  const lines = ['# Inbox', ''];
  const count = Math.max(10, Math.round(300 * scale));
  for (let i = 0; i < count; i++) {
    const sender = r.chance(0.7) ? s.person() : `${r.pick(COMPANY_HEADS)}${r.pick(COMPANY_TAILS)} billing`;
    const text = r.pick([
      () => `Can we move our meeting to ${r.pick(WEEKDAYS)}? Reach me at ${s.email()}`,
      () => `The draft for ${r.pick(SUBJECTS)} is ready; call ${s.phone()} with questions.`,
      () => `Invoice ${s.issue()} is ready.`,
      () => `${s.order()} has shipped: ${s.url()}`,
      () => `Pictures from the weekend attached!`,
      () => `Reminder: ${r.pick(SUBJECTS)} on ${s.date()} at ${s.time()}.`,
      () => `Version ${s.version()} is out with the fix you asked for.`,
    ])();
    lines.push(`- [${r.chance(0.3) ? 'unread' : 'read'}] ${sender}: ${text}`);
  }
  return `${lines.join('\n')}\n`;
}

function meeting(r: Random, s: ReturnType<typeof shapes>, date: string, kind: string): string {
  const title = kind.replace(/-/g, ' ').replace(/^./, (c) => c.toUpperCase());
  const attendees = Array.from({ length: r.int(2, 6) }, () => r.pick(FIRST_NAMES));
  const lines = [
    `# ${title} — ${date}`,
    '',
    `Summary: ${r.pick([
      `agreed to freeze the API until the ${s.version()} release.`,
      `the roadmap is approved, with ${r.pick(SUBJECTS)} moved to next quarter.`,
      `${r.pick(FIRST_NAMES)} owns ${r.pick(SUBJECTS)}; follow-up on ${s.date()}.`,
      `no decision yet on ${r.pick(SUBJECTS)}; more data needed.`,
      `the ${r.pick(SYSTEMS)} ${r.pick(ISSUES)} is fixed in ${s.version()}.`,
    ])}`,
    '',
    `- Attendees: ${[...new Set(attendees)].join(', ')}`,
  ];
  const target = r.int(600, 4000);
  while (lines.join('\n').length < target) {
    lines.push(
      r.pick([
        () => `- Decision: ${r.pick(['no breaking changes before the release', 'ship behind a flag', 'hire one more engineer', 'move the offsite to spring'])}.`,
        () => `- ${r.pick(FIRST_NAMES)} (${s.email()}) will circulate the notes.`,
        () => `- Action: ${r.pick(FIRST_NAMES)} to follow up on ${s.issue()} by ${s.date()}.`,
        () => `- Dial-in ${s.phone()}, link ${s.url()}.`,
        () => `- ${r.pick(FIRST_NAMES)}: ${memoryLine(r, s)}`,
        () => `- Risk: the ${r.pick(SYSTEMS)} ${r.pick(ISSUES)} could slip the date.`,
      ])(),
    );
  }
  return `${lines.join('\n')}\n`;
}

function topic(r: Random, s: ReturnType<typeof shapes>, id: string, large: boolean): string {
  const name = id.replace(/-/g, ' ');
  const lines = [
    `# Topic: ${name}`,
    '',
    `Summary: Alex is working through ${name}; ${r.pick(['a decision is due soon', 'this is a slow, ongoing thread', 'the next step depends on a call back', 'money and timing are the open questions'])}.`,
    '',
    '## Recent turns',
    '',
  ];
  const target = large ? r.int(40_000, 120_000) : r.int(700, 4_500);
  let size = lines.join('\n').length;
  while (size < target) {
    const line = r.chance(0.5)
      ? `- Alex: ${memoryLine(r, s)}`
      : `- Assistant: ${r.pick([
          `What would make this acceptable to you by ${r.pick(WEEKDAYS)}?`,
          'Then the question is whether the flexibility is worth the extra cost.',
          `I noted ${s.issue()}; do you want a reminder on ${s.date()}?`,
          'That sounds tiring. Do you want to park it until tomorrow?',
          `The last version we discussed was ${s.version()}.`,
        ])}`;
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

function personPage(r: Random, s: ReturnType<typeof shapes>, name: string): string {
  const lines = [
    `# ${name}`,
    '',
    `${r.pick(['Engineering manager', 'Neighbour', 'Landlord', 'Accountant', 'Friend from university', 'Designer', 'Recruiter', 'Cousin', 'Doctor', 'Piano teacher'])}. ${r.pick(['Prefers async updates.', 'Best reached by phone.', 'Replies within a day.', 'Met through Sam.', 'Works at a startup downtown.'])}`,
    '',
    `- Email: ${s.email(name)}`,
    `- Phone: ${s.phone()}`,
  ];
  const target = r.int(300, 1_800);
  while (lines.join('\n').length < target) lines.push(`- ${s.date()}: ${memoryLine(r, s)}`);
  return `${lines.join('\n')}\n`;
}

function companyPage(r: Random, s: ReturnType<typeof shapes>, name: string): string {
  const lines = [
    `# ${name}`,
    '',
    `${r.pick(['Supplier of the office furniture.', 'Our bank.', 'Landlord\'s agency.', 'A customer since 2023.', 'Insurance provider.', 'The accountants.'])} Account manager: ${s.person()}.`,
    '',
    `- Support: ${s.phone()}, ${s.email(name)}`,
    `- Portal: ${s.url()}`,
  ];
  const target = r.int(300, 1_500);
  while (lines.join('\n').length < target) lines.push(`- ${s.date()}: invoice ${s.issue()}, ${r.pick(['paid', 'open', 'disputed', 'credited'])}.`);
  return `${lines.join('\n')}\n`;
}

function uniqueNames(count: number, make: () => string): string[] {
  const seen = new Map<string, number>();
  const out: string[] = [];
  while (out.length < count) {
    const base = make();
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    out.push(n === 1 ? base : `${base}-${n}`);
  }
  return out;
}

/**
 * Plans every file of the benchmark brain in memory: the same options always give the
 * same paths and bytes (seeded PRNG, fixed calendar), whatever the machine or the day.
 */
export function planBrain(options: BrainOptions = {}): BrainPlan {
  const seed = options.seed ?? DEFAULT_SEED;
  const scale = options.scale ?? 1;
  const endDate = options.endDate ?? DEFAULT_END_DATE;
  if (!(scale > 0 && scale <= 1)) throw new RangeError('scale must be in (0, 1]');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(endDate)) throw new RangeError('endDate must be YYYY-MM-DD');
  const r = createRandom(`${seed}:${GENERATOR_VERSION}`);
  const s = shapes(r, endDate);
  const files: BrainFile[] = [];
  const add = (path: string, content: string) => files.push({ path, content });

  add('SOUL.md', soul(r));
  add(
    'memory/heartbeat-state.json',
    `${JSON.stringify({ currentLocation: { timezone: BRAIN_TIMEZONE, city: 'Portland' }, lastHeartbeat: `${endDate}T08:05:00-08:00` }, null, 2)}\n`,
  );
  add('tasks/open.md', tasks(r, s, scale));
  add('calendar/today.md', calendar(r, s, endDate));
  add('messages/inbox.md', inbox(r, s, scale));

  const days = Math.max(3, Math.round(MEMORY_DAYS * scale));
  for (let back = days - 1; back >= 0; back--) {
    const date = addDays(endDate, -back);
    const target = r.int(1_000, 6_000);
    const lines = [`# ${date}`, ''];
    let size = 0;
    while (size < target) {
      const line = `- ${memoryLine(r, s)}`;
      lines.push(line);
      size += line.length + 1;
    }
    if (r.chance(0.1)) lines.push('', `(${weekday(date)} — written late)`);
    add(`memory/${date}.md`, `${lines.join('\n')}\n`);
  }

  const meetingNames = uniqueNames(Math.max(3, Math.round(MEETINGS * scale)), () => {
    // Yesterday at the latest, so the newest meeting note is a stable, known file.
    const date = addDays(endDate, -r.int(1, MEMORY_DAYS - 1));
    return `${date}-${r.pick(MEETING_KINDS)}`;
  });
  for (const name of meetingNames) add(`meetings/${name}.md`, meeting(r, s, name.slice(0, 10), name.slice(11).replace(/-\d+$/, '')));

  const topicCount = Math.max(3, Math.round(TOPICS * scale));
  const topicIds = uniqueNames(topicCount, () => `${r.pick(TOPIC_HEADS)}-${r.pick(TOPIC_TAILS)}`);
  let largest = { id: topicIds[0]!, bytes: 0 };
  let typical = '';
  topicIds.forEach((id, index) => {
    const large = index % 20 === 7;
    const content = topic(r, s, id, large);
    const bytes = Buffer.byteLength(content);
    if (bytes > largest.bytes) largest = { id, bytes };
    if (!large && !typical && bytes > 1_500) typical = id;
    add(`topics/${id}.md`, content);
  });

  const companyNames = uniqueNames(Math.max(2, Math.round(COMPANIES * scale)), () => `${r.pick(COMPANY_HEADS)}${r.pick(COMPANY_TAILS)}`);
  for (const name of companyNames) add(`companies/${slugify(name)}.md`, companyPage(r, s, name.replace(/-\d+$/, '')));

  const workers = Object.keys(WORKERS);
  for (const worker of workers) {
    add(
      `workers/${worker}/identity.md`,
      `You are ${worker[0]!.toUpperCase()}${worker.slice(1)}, ${WORKERS[worker]}\n\nYou never invent facts, names or dates. When something is ambiguous you ask one question rather than guess.\n`,
    );
    add(`workers/${worker}/policy.json`, `${JSON.stringify({ limitChars: 24_000, blocks: { memory: 2_000, task: 8_000 } }, null, 2)}\n`);
    for (const note of ['style', 'people', 'routines']) {
      const entries: string[] = [];
      for (let i = 0; i < r.int(4, 12); i++) entries.push(`## ${r.pick(['Prefers', 'Avoid', 'Always', 'Remember'])} ${r.pick(SUBJECTS).replace(/^the /, '')} ${i + 1}\n${memoryLine(r, s)}\n`);
      add(`workers/${worker}/memory/${note}.md`, entries.join('\n'));
    }
  }
  for (const [channel, purpose] of Object.entries(CHANNELS)) add(`channels/${channel}/purpose.md`, `${purpose}\n`);
  add('personas/README.md', 'Put `mars.md` or `venus.md` here to override a built-in persona\'s body.\n');
  add(
    'personas/venus.md',
    'You are Venus, Alex\'s fast logistics assistant. You answer in one or two short sentences, lead with the next thing ' +
      'that needs doing, and read times in the operator\'s timezone. You never read phone numbers or email addresses aloud.\n',
  );

  const remaining = Math.round(TOTAL_FILES * scale) - files.length - 1; // the manifest is the last file
  const peopleNames = uniqueNames(Math.max(2, remaining), () => `${r.pick(FIRST_NAMES)} ${r.pick(LAST_NAMES)}`);
  for (const name of peopleNames) add(`people/${slugify(name)}.md`, personPage(r, s, name.replace(/-\d+$/, '')));

  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const hash = createHash('sha256');
  const counts: Record<string, number> = {};
  let totalBytes = 0;
  for (const file of files) {
    hash.update(file.path).update('\0').update(file.content).update('\0');
    totalBytes += Buffer.byteLength(file.content);
    const top = file.path.includes('/') ? file.path.slice(0, file.path.indexOf('/')) : '.';
    counts[top] = (counts[top] ?? 0) + 1;
  }
  const manifest: BrainManifest = {
    generatorVersion: GENERATOR_VERSION,
    seed,
    scale,
    endDate,
    timezone: BRAIN_TIMEZONE,
    totalFiles: files.length + 1,
    totalBytes,
    sha256: hash.digest('hex'),
    counts,
    workers,
    channels: Object.keys(CHANNELS),
    topics: { typical: typical || topicIds[0]!, largest: largest.id, largestBytes: largest.bytes },
  };
  return { files, manifest };
}

async function readManifest(dir: string): Promise<BrainManifest | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, MANIFEST_FILE), 'utf8')) as BrainManifest;
  } catch {
    return undefined;
  }
}

async function isEmptyOrMissing(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
}

/** Staging directories left by an interrupted run (`<brain>.tmp-<pid>`). */
async function removeStaleStaging(target: string): Promise<void> {
  const prefix = `${basename(target)}.tmp-`;
  let names: string[] = [];
  try {
    names = await readdir(dirname(target));
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(prefix) && /^\d+$/.test(name.slice(prefix.length))) {
      await rm(join(dirname(target), name), { recursive: true, force: true });
    }
  }
}

export interface EnsuredBrain {
  dir: string;
  manifest: BrainManifest;
  /** False when an identical brain was already on disk. */
  generated: boolean;
}

/**
 * Makes `dir` hold the brain for these options: reuses it when its manifest matches,
 * otherwise writes a fresh one beside it and swaps it in. Never deletes a directory that
 * is neither empty nor a generated brain.
 */
export async function ensureBrain(dir: string, options: BrainOptions = {}): Promise<EnsuredBrain> {
  const target = resolve(dir);
  const wanted = { seed: options.seed ?? DEFAULT_SEED, scale: options.scale ?? 1, endDate: options.endDate ?? DEFAULT_END_DATE };
  const existing = await readManifest(target);
  if (
    existing &&
    existing.generatorVersion === GENERATOR_VERSION &&
    existing.seed === wanted.seed &&
    existing.scale === wanted.scale &&
    existing.endDate === wanted.endDate
  ) {
    return { dir: target, manifest: existing, generated: false };
  }
  if (!existing && !(await isEmptyOrMissing(target))) {
    throw new Error(`${target} exists and is not a generated benchmark brain; refusing to replace it`);
  }

  const { files, manifest } = planBrain(wanted);
  await removeStaleStaging(target);
  const staging = `${target}.tmp-${process.pid}`;
  try {
    const dirs = new Set(files.map((file) => dirname(join(staging, file.path))));
    for (const path of [...dirs].sort()) await mkdir(path, { recursive: true });
    const BATCH = 64;
    for (let i = 0; i < files.length; i += BATCH) {
      await Promise.all(files.slice(i, i + BATCH).map((file) => writeFile(join(staging, file.path), file.content)));
    }
    // The manifest goes last: a brain with a manifest is a complete brain.
    await writeFile(join(staging, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return { dir: target, manifest, generated: true };
}
