/**
 * The trace viewer's entry point: hash routing (`#/runs`, `#/runs/<runId>`,
 * `#/compare/<a>/<b>`) over one static page, and the token form shown only when the
 * service answers 401.
 */
import { createApi, sessionTokenStore, type AskToken } from './api.js';
import { renderCompare } from './compare-view.js';
import { h, replace } from './dom.js';
import { formatTime, parseHash, runsHash, STATUS_PATH, statusWords, type ServiceStatus } from './model.js';
import { renderRun } from './run-view.js';
import { renderRunList } from './views.js';

const main = document.getElementById('main')!;
const auth = document.getElementById('auth')!;
const forget = document.getElementById('forget') as HTMLButtonElement;
const tokens = sessionTokenStore(window.sessionStorage);

const showForget = () => {
  forget.hidden = tokens.get() === null;
};

const askToken: AskToken = (reason) =>
  new Promise((resolve) => {
    const input = h('input', {
      type: 'password',
      name: 'token',
      autocomplete: 'off',
      placeholder: 'bearer token',
      ariaLabel: 'bearer token',
    });
    const form = h(
      'form',
      {
        class: 'token-form',
        onSubmit: (event) => {
          event.preventDefault();
          const token = input.value.trim();
          if (!token) return;
          replace(auth);
          auth.hidden = true;
          main.hidden = false;
          resolve(token);
        },
      },
      h('h1', {}, 'Token required'),
      reason === 'rejected'
        ? h('p', { class: 'problem', role: 'alert' }, 'That token was not accepted. Try another one.')
        : h('p', {}, 'This service requires one of its configured bearer tokens (CONTEXT_COMPILER_TOKENS).'),
      h(
        'p',
        { class: 'muted small' },
        'It is kept in this tab’s sessionStorage only — never in a URL or a cookie — and sent as an Authorization header to the JSON API.',
      ),
      h('div', { class: 'token-row' }, input, h('button', { type: 'submit' }, 'Continue')),
    );
    // The page waiting for data stays in place, hidden, and fills in once the token works.
    replace(auth, form);
    main.hidden = true;
    auth.hidden = false;
    input.focus();
  });

const api = createApi(document.baseURI, tokens, askToken);
let generation = 0;
const strip = document.getElementById('status')!;

/** The status strip: is the service ready, how many compiles failed and why, how many calls fell back — on every page, read again on each. */
async function showStatus(): Promise<void> {
  let status: ServiceStatus;
  try {
    status = await api.get<ServiceStatus>(STATUS_PATH);
  } catch {
    replace(strip, h('span', { class: 'status-unknown' }, 'Service status unavailable (GET /status did not answer).'));
    strip.dataset['ready'] = 'unknown';
    return;
  }
  const words = statusWords(status);
  strip.dataset['ready'] = String(words.ready);
  replace(
    strip,
    h('strong', { class: 'status-readiness' }, `${words.ready ? '●' : '✗'} ${words.readiness}`),
    h('span', { class: 'status-compiles' }, words.compiles),
    h('span', { class: 'status-fallbacks' }, words.fallbacks),
    h('span', { class: 'status-since' }, `since ${formatTime(status.since)}`),
  );
}

async function route(): Promise<void> {
  const mine = ++generation;
  const context = { api, main, current: () => mine === generation };
  const view = parseHash(location.hash);
  showForget();
  void showStatus();
  if (view.name === 'runs') await renderRunList(context, view.filter);
  else if (view.name === 'run') await renderRun(context, view.runId);
  else if (view.name === 'compare') await renderCompare(context, view.runIds);
  else replace(main, h('h1', {}, 'Not found'), h('p', {}, 'No such page in the viewer. ', h('a', { href: runsHash() }, 'See the runs.')));
  if (context.current()) showForget();
}

forget.addEventListener('click', () => {
  tokens.clear();
  void route();
});
window.addEventListener('hashchange', () => void route());
void route();
