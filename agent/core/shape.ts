// One declaration of a JSON shape, from which both the TypeScript type
// (`ShapeOf<typeof x>`) and the reader's check come: a status section
// (core/feature.ts) is written once, as a value, and the reader of
// status.json checks every field with it. A check returns the value typed,
// or undefined when it does not fit; an object keeps only the fields it
// declares (anything else is dropped), so a newer agent's extra field never
// reaches the reader's caller.
//
// The rules the status reader has always kept: a required field that is
// missing or wrong makes the whole object not fit; an optional one that is
// wrong is dropped alone; a list or a map fits only when every element does
// (`keptListOf` keeps the fitting elements instead: a kind a newer agent
// added is left out, the others kept).

export type Check<T> = (v: unknown) => T | undefined;

/** The type a check declares. */
export type ShapeOf<C> = C extends Check<infer T> ? T : never;

export function isObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export const str: Check<string> = (v) => (typeof v === 'string' ? v : undefined);
export const bool: Check<boolean> = (v) => (typeof v === 'boolean' ? v : undefined);
/** A finite number. */
export const num: Check<number> = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/** A count or a size: a whole number, not negative. */
export const count: Check<number> = (v) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/** One of the given literals. */
export function oneOf<const L extends readonly (string | number)[]>(values: L): Check<L[number]> {
  return (v) => values.find((x) => x === v);
}

/** null, or what `check` takes. */
export function nullable<T>(check: Check<T>): Check<T | null> {
  return (v) => (v === null ? null : check(v));
}

/** Every element fits, or the list is dropped. */
export function listOf<T>(check: Check<T>): Check<T[]> {
  return (v) => {
    if (!Array.isArray(v)) return undefined;
    const out: T[] = [];
    for (const x of v) {
      const y = check(x);
      if (y === undefined) return undefined;
      out.push(y);
    }
    return out;
  };
}

/** The elements that fit, the others left out (a kind a newer agent added). */
export function keptListOf<T>(check: Check<T>): Check<T[]> {
  return (v) => (Array.isArray(v) ? v.flatMap((x) => { const y = check(x); return y === undefined ? [] : [y]; }) : undefined);
}

/** Every value fits, or the map is dropped. Built with fromEntries: a key such as "__proto__" stays a plain key. */
export function mapOf<T>(check: Check<T>): Check<Record<string, T>> {
  return (v) => {
    if (!isObject(v)) return undefined;
    const out: Array<[string, T]> = [];
    for (const [k, x] of Object.entries(v)) {
      const y = check(x);
      if (y === undefined) return undefined;
      out.push([k, y]);
    }
    return Object.fromEntries(out);
  };
}

const OPTIONAL = Symbol('optional');
/** An optional field: kept when present and fitting, else left out (the object still fits). */
export interface Optional<T> {
  readonly [OPTIONAL]: Check<T>;
}
export function optional<T>(check: Check<T>): Optional<T> {
  return { [OPTIONAL]: check };
}

type Field = Check<unknown> | Optional<unknown>;
type Fields = Readonly<Record<string, Field>>;
type RequiredKeys<F extends Fields> = { [K in keyof F]: F[K] extends Optional<unknown> ? never : K }[keyof F];
type OptionalKeys<F extends Fields> = { [K in keyof F]: F[K] extends Optional<unknown> ? K : never }[keyof F];
type Flat<T> = { [K in keyof T]: T[K] };
/** The object type `obj(fields)` declares: required fields, then optional ones (`?`, never `undefined` written out). */
export type ObjectOf<F extends Fields> = Flat<
  { [K in RequiredKeys<F>]: F[K] extends Check<infer T> ? T : never } & { [K in OptionalKeys<F>]?: F[K] extends Optional<infer T> ? T : never }
>;

/** An object with these fields (and only these kept). */
export function obj<F extends Fields>(fields: F): Check<ObjectOf<F>> {
  const entries = Object.entries(fields);
  return (v) => {
    if (!isObject(v)) return undefined;
    const out: Record<string, unknown> = {};
    for (const [key, field] of entries) {
      if (OPTIONAL in field) {
        const y = field[OPTIONAL](v[key]);
        if (y !== undefined) out[key] = y;
      } else {
        const y = field(v[key]);
        if (y === undefined) return undefined;
        out[key] = y;
      }
    }
    return out as ObjectOf<F>;
  };
}

/** Any JSON object, kept as it is (a record the reader passes on without looking inside). */
export const anyObject: Check<Record<string, unknown>> = (v) => (isObject(v) ? { ...v } : undefined);

/**
 * One of several object shapes told apart by the string at `key`: `variant('phase',
 * { waiting: obj({ expires_in: count }), … })` takes `{ phase: 'waiting', expires_in: 60 }`.
 */
export function variant<K extends string, M extends Readonly<Record<string, Check<object>>>>(key: K, cases: M): Check<{ [P in keyof M & string]: Flat<{ [Q in K]: P } & ShapeOf<M[P]>> }[keyof M & string]> {
  return (v) => {
    if (!isObject(v)) return undefined;
    const tag = v[key];
    if (typeof tag !== 'string' || !Object.hasOwn(cases, tag)) return undefined;
    const body = cases[tag]!(v);
    return body === undefined ? undefined : ({ [key]: tag, ...body } as never);
  };
}
