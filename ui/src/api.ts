/**
 * The viewer's only way to the service: the JSON API with `Authorization: Bearer` from
 * sessionStorage. It tries without a token first (a loopback service without tokens just
 * answers) and asks the person only on a 401; the token never goes in a URL or a cookie.
 */
import type { Problem } from './model.js';

const TOKEN_KEY = 'context-compiler.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(problem.detail ?? problem.title ?? `HTTP ${status}`);
  }
}

export interface TokenStore {
  get(): string | null;
  set(token: string): void;
  clear(): void;
}

export function sessionTokenStore(storage: Storage): TokenStore {
  return {
    get: () => storage.getItem(TOKEN_KEY),
    set: (token) => storage.setItem(TOKEN_KEY, token),
    clear: () => storage.removeItem(TOKEN_KEY),
  };
}

/** Asks the person for a token; `rejected` when the one they gave was refused. */
export type AskToken = (reason: 'required' | 'rejected') => Promise<string>;

export interface Api {
  get<T>(path: string): Promise<T>;
}

export function createApi(base: string, tokens: TokenStore, askToken: AskToken): Api {
  // Parallel requests that all meet a 401 wait for one answer from the person.
  let asking: Promise<string> | null = null;
  const ask = (reason: 'required' | 'rejected') => {
    asking ??= askToken(reason).finally(() => {
      asking = null;
    });
    return asking;
  };

  async function get<T>(path: string): Promise<T> {
    for (;;) {
      const token = tokens.get();
      const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
      if (token) headers['authorization'] = `Bearer ${token}`;
      const response = await fetch(new URL(path, base), {
        headers,
        credentials: 'omit',
        cache: 'no-store',
        redirect: 'error',
        referrerPolicy: 'no-referrer',
      });
      if (response.status === 401) {
        tokens.clear();
        tokens.set(await ask(token ? 'rejected' : 'required'));
        continue;
      }
      let body: unknown = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      if (!response.ok) {
        const problem = body && typeof body === 'object' ? (body as Problem) : { title: response.statusText, status: response.status };
        throw new ApiError(response.status, problem);
      }
      return body as T;
    }
  }

  return { get };
}
