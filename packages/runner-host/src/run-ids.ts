import { HOST_LIMITS } from './host-limits.js';

/**
 * The run ids a session has seen (run, rejected or invalid), so a reused id is refused. Bounded:
 * past `HOST_LIMITS.rememberedRunIds` the oldest is forgotten.
 */
export class RunIdMemory {
  readonly #ids = new Set<string>();
  readonly #max: number;

  constructor(max: number = HOST_LIMITS.rememberedRunIds) {
    this.#max = max;
  }

  has(runId: string): boolean {
    return this.#ids.has(runId);
  }

  remember(runId: string): void {
    this.#ids.add(runId);
    if (this.#ids.size > this.#max) {
      const oldest = this.#ids.values().next().value;
      if (oldest !== undefined) this.#ids.delete(oldest);
    }
  }
}
