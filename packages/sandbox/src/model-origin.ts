import { SandboxError } from './errors.js';

/** Holds the one model origin a confinement's proxy admits while turns use it. */
export interface ModelOriginLease {
  /**
   * Admits `baseUrl`'s origin for one turn and returns its release. Throws
   * `ERR_MODEL_ORIGIN_BUSY` while a turn of another session holds a different origin.
   */
  acquire(baseUrl: string): () => void;
}

/**
 * `allow` admits the origin and may return its release, called when no turn holds it any more.
 * One confinement has one proxy, shared by every socket session: if a second session's turn
 * could replace the model origin, the first session's confined code would reach the second's
 * model gateway, or lose its own mid-turn. So a differing origin is refused while any turn holds
 * the current one, and replaced only once none does (docs/sandbox.md, "Socket mode").
 */
export function modelOriginLease(allow: (origin: string) => void | (() => void)): ModelOriginLease {
  let held: { origin: string; turns: number; revoke?: () => void } | undefined;
  return {
    acquire(baseUrl) {
      let origin: string;
      try {
        origin = new URL(baseUrl).origin;
      } catch (cause) {
        throw new SandboxError('ERR_ISOLATION_POLICY_INVALID', 'the model baseUrl is not a URL', {
          cause,
        });
      }
      if (held !== undefined && held.origin !== origin)
        throw new SandboxError(
          'ERR_MODEL_ORIGIN_BUSY',
          `another session's turn is using the model origin ${held.origin}; a turn for ${origin} must wait until it ends`,
        );
      if (held === undefined) {
        const revoke = allow(baseUrl);
        held = { origin, turns: 0, ...(typeof revoke === 'function' ? { revoke } : {}) };
      }
      const current = held;
      current.turns += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        current.turns -= 1;
        // The last turn over: the origin is no longer admitted, so a later turn without a
        // `baseUrl` (or code left running after the turn) cannot reach it.
        if (current.turns === 0 && held === current) {
          held = undefined;
          current.revoke?.();
        }
      };
    },
  };
}
