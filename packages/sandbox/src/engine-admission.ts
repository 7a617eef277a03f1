import type { EngineSource, LoadPackEngineOptions } from '@packwarden/engines';
import { verifyEngine } from '@packwarden/pack-signature';
import { selectTrustedKey, type PackTrustRoot } from '@packwarden/trust-root';
import { SandboxError } from './errors.js';
import { replaceWithCopy } from './pack-copy.js';

/** Where verified copies of installed engines live: `<state>/verified-engines/<id>/`. */
export const VERIFIED_ENGINES_DIR = 'verified-engines';

export interface EngineAdmissionOptions {
  requireSigned: boolean;
  /** `<state>`: the verified copies go to `<state>/verified-engines/<id>/`, outside `<state>/engine`. */
  stateDir?: string;
  /** The pack's trust root: an installed engine's `engine.sig` must verify with it. */
  trustRoot?: () => Promise<PackTrustRoot>;
}

type Admit = NonNullable<LoadPackEngineOptions['admit']>;

/**
 * What may load (docs/sandbox.md, "What may load"). With a signature required, every line of
 * engine code comes from a verified copy or from packwarden itself: built-in engines (which no
 * folder can shadow, with or without signatures), the pack's own `engines/<id>/` in the verified
 * pack copy, and an engine installed under `$PACKWARDEN_HOME/engines/` only through its copy in
 * `<state>/verified-engines/<id>/`, made before any of it loads and admitted only when THAT copy
 * carries a valid `engine.sig` for `<id>` by a key of the pack's trust root. The copy is what
 * loads, so the installed folder (in the sandbox `<state>/packwarden`, writable by pack code)
 * changing after the check changes nothing. Anything else is `ERR_ENGINE_UNVERIFIED`, before any
 * of the engine is read. The first admission of an id is reused by later sessions (one copy, one
 * verification per boot). Without a signature required, nothing is verified and every source
 * may load from where it is.
 */
export function engineAdmission(options: EngineAdmissionOptions): Admit {
  const admitted = new Map<string, Promise<{ folder: string }>>();
  return (source: EngineSource) => {
    if (!options.requireSigned || source.kind !== 'installed') return undefined;
    let pending = admitted.get(source.id);
    if (pending === undefined) {
      pending = admitInstalled(source, options);
      admitted.set(source.id, pending);
      // A refusal is not remembered as an admission: the next session checks again.
      pending.catch(() => admitted.delete(source.id));
    }
    return pending;
  };
}

async function admitInstalled(
  source: Extract<EngineSource, { kind: 'installed' }>,
  options: EngineAdmissionOptions,
): Promise<{ folder: string }> {
  const refuse = (why: string): SandboxError =>
    new SandboxError(
      'ERR_ENGINE_UNVERIFIED',
      `the pack's engine ${JSON.stringify(source.id)} is not in the verified pack, and a signature is required: refusing to load the engine installed at ${source.folder} (${why}); sign it (packwarden engine sign) with a key the trust root trusts, or ship it inside the signed pack (engines/${source.id}/)`,
    );
  if (options.stateDir === undefined || options.trustRoot === undefined) {
    throw refuse('no trust root to verify an engine signature with');
  }
  // Copy first, verify the copy, load only the copy: nothing read from the writable install
  // after this point can reach the engine (same pattern as the pack copy, docs/sandbox.md).
  const folder = await replaceWithCopy(
    source.folder,
    options.stateDir,
    [VERIFIED_ENGINES_DIR, source.id],
    'the verified engine copy',
  );
  const root = await options.trustRoot();
  const result = await verifyEngine(folder, {
    selectKey: (kid, at) => selectTrustedKey(root, kid, { at }),
    expectedId: source.id,
  });
  if (result.kind !== 'verified') {
    throw refuse(`${result.kind}: ${result.message.split('\n')[0] ?? ''}`);
  }
  return { folder };
}
