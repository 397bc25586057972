// Route table of the device API. Parametrised routes are keyed by their
// pattern, which is also the rate-limit path ("per user and path").
import type { IncomingMessage } from 'node:http';
import type { Reply } from './http.js';

export interface Ctx {
  req: IncomingMessage;
  method: string;
  path: string;
  query: string;
  t: number;
  clientVersion?: string;
  /** Device named by the bearer token, or (auth endpoints) by the form; handlers may set it. */
  deviceId?: string;
  authValid: boolean;
  params: string[];
  body: Buffer;
}

/** bearer: valid device token required; form: OAuth endpoints (version checked, no bearer); public: /health. */
export type AuthMode = 'bearer' | 'form' | 'public';

export interface Route {
  method: string;
  pattern: string;
  auth: AuthMode;
  handler: (ctx: Ctx) => Reply | Promise<Reply>;
}

export interface Match {
  route?: Route;
  params: string[];
  /** Path exists with another method. */
  methodMismatch: boolean;
}

export class Router {
  private readonly exact = new Map<string, Route>();
  private readonly dynamic: Array<{ re: RegExp; route: Route }> = [];
  private readonly paths = new Set<string>();

  add(route: Route): this {
    if (route.pattern.includes('{')) {
      const re = new RegExp('^' + route.pattern.replace(/\{[^}]+\}/g, '([^/]+)') + '$');
      this.dynamic.push({ re, route });
    } else {
      this.exact.set(`${route.method} ${route.pattern}`, route);
      this.paths.add(route.pattern);
    }
    return this;
  }

  match(method: string, path: string): Match {
    const route = this.exact.get(`${method} ${path}`);
    if (route) return { route, params: [], methodMismatch: false };
    let mismatch = this.paths.has(path);
    for (const d of this.dynamic) {
      const m = d.re.exec(path);
      if (!m) continue;
      if (d.route.method !== method) {
        mismatch = true;
        continue;
      }
      return { route: d.route, params: m.slice(1).map(safeDecode), methodMismatch: false };
    }
    return { params: [], methodMismatch: mismatch };
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
