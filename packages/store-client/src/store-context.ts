import { StoreError } from './errors.js';
import type { FetchLike } from './http.js';

/** What downloads use: fetch, cache folder, GitHub token, timeouts. Internal: never exported. */
export interface StoreContext {
  fetch: FetchLike;
  env: Record<string, string | undefined>;
  cacheDir: string | undefined;
  /** Authenticates index cache entries; without it the index cache is not used. */
  cacheKey?: Uint8Array;
  timeoutMs: number;
  githubToken?: { value: string; origin: string };
  signal: AbortSignal | undefined;
}

// Kept beside the store, not on it: the context carries the GitHub token, which no caller
// should be able to read (or log) from a store object.
const contexts = new WeakMap<object, StoreContext>();

/** Gives `store` its download context (openStore, openPackArchive). */
export function attachStoreContext<T extends object>(store: T, context: StoreContext): T {
  contexts.set(store, context);
  return store;
}

/** The download context of a store made by `openStore` / `openPackArchive`. */
export function storeContext(store: object): StoreContext {
  const context = contexts.get(store);
  if (context === undefined) {
    throw new StoreError(
      'ERR_INVALID_ARGUMENT',
      'installPack needs a store opened with openStore or openPackArchive',
    );
  }
  return context;
}
