import type { EngineSource } from '@packwarden/engines';
import { SandboxError } from './errors.js';

/**
 * What may load (docs/sandbox.md, "What may load"). With a signature required, every line of
 * engine code comes from the verified copy of the pack or from packwarden itself: built-in
 * engines (which no folder can shadow, with or without signatures) and the pack's own
 * `engines/<id>/` in the verified copy. An engine installed under `$PACKWARDEN_HOME/engines/`
 * (in the sandbox `<state>/packwarden`, writable by pack code and never verified) is refused with
 * `ERR_ENGINE_UNVERIFIED` before any of it is read. Without a signature required, nothing is
 * verified anyway and every source may load.
 */
export function engineAdmission(options: {
  requireSigned: boolean;
}): (source: EngineSource) => void {
  return (source) => {
    if (!options.requireSigned || source.kind !== 'installed') return;
    throw new SandboxError(
      'ERR_ENGINE_UNVERIFIED',
      `the pack's engine ${JSON.stringify(source.id)} is not in the verified pack, and a signature is required: refusing to load the unverified engine installed at ${source.folder}; ship the engine inside the signed pack (engines/${source.id}/)`,
    );
  };
}
