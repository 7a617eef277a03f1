import type { EngineRunOptions } from './engine.js';
import { requestedFileAccess, type RunFrame } from './frames.js';
import { RUN_SECRET_MAP_FIELDS, RUN_SECRET_VALUE_FIELDS } from './run-secrets.js';

/**
 * What an engine's `stream` gets from a `run` frame: frozen, with the secrets (`modelToken`,
 * `turnEnv`, `gatewaySessionKey`: the fields `run-secrets.ts` lists) as non-enumerable properties so that logging or spreading the
 * options never copies them (README "Secrets").
 */
export function engineRunOptions(
  frame: RunFrame,
  engineId: string,
  hostSessionId: string,
  sessionNativeId: string | undefined,
): EngineRunOptions {
  const base: Record<string, unknown> = { runId: frame.runId, engineId, hostSessionId };
  const copy = (key: keyof RunFrame) => {
    if (frame[key] !== undefined) base[key] = frame[key];
  };
  copy('modelId');
  copy('sessionId');
  // Engines get the contract's words only (README "File access"), never the wire's aliases.
  const fileAccess = requestedFileAccess(frame);
  if (fileAccess !== undefined) base.permissions = { fileAccess };
  copy('workspaceRoot');
  copy('additionalDirectories');
  copy('baseUrl');
  copy('analyticsUserId');
  const nativeSessionId = frame.nativeSessionId ?? sessionNativeId;
  if (nativeSessionId !== undefined) base.nativeSessionId = nativeSessionId;
  const hidden = (key: string, value: unknown) =>
    Object.defineProperty(base, key, {
      value,
      enumerable: false,
      writable: false,
      configurable: false,
    });
  for (const field of RUN_SECRET_VALUE_FIELDS) {
    if (frame[field] !== undefined) hidden(field, frame[field]);
  }
  for (const field of RUN_SECRET_MAP_FIELDS) {
    if (frame[field] !== undefined) hidden(field, Object.freeze({ ...frame[field] }));
  }
  return Object.freeze(base) as unknown as EngineRunOptions;
}
