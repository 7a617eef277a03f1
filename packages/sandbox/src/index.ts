// @packwarden/sandbox: the sandbox service, the `run` driver, and the confinement of pack code.
export { SandboxError, isSandboxError } from './errors.js';
export type { SandboxErrorCode, SandboxErrorOptions } from './errors.js';
export { SANDBOX_LIMITS } from './limits.js';

export { serveSandbox } from './serve.js';
export type { ServeSandboxOptions } from './serve.js';
export { bootPack } from './boot.js';
export type { BootPackOptions, BootedPack, SandboxLogger } from './boot.js';
export { applyStateEnvironment, createSandboxState, CREDENTIAL_VARIABLES } from './state.js';
export type { SandboxState } from './state.js';
export { ENGINE_ENV_ALLOWED, engineEnvironment, pruneEnvironment } from './engine-env.js';
export { engineAdmission } from './engine-admission.js';
export { confineSandbox, ISOLATION_MODES } from './confine.js';
export type { SandboxConfinement } from './confine.js';
export {
  assertNoOverlap,
  copyPackTree,
  pathsOverlap,
  prepareTargetDir,
  replaceWithCopy,
} from './pack-copy.js';
export { sessionEngine } from './session-engine.js';
export { modelOriginLease } from './model-origin.js';
export type { ModelOriginLease } from './model-origin.js';
export type { SessionEngine } from './session-engine.js';
export { takeOverStdio } from './stdio.js';

export { defaultRunStateDir, runInSandbox, sandboxChildEnvironment } from './run.js';
export type { RunInSandboxOptions, RunInSandboxResult } from './run.js';

export {
  createConfinement,
  GUARANTEE_IDS,
  ISOLATION_LIMITS,
  parseAllowedOrigin,
  probeIsolation,
  RequestHeadReader,
  runDoctor,
  startHostProxy,
} from './isolation/index.js';
export type {
  AllowedOrigin,
  Confinement,
  ConfinementPolicy,
  CreateConfinementOptions,
  DoctorOptions,
  DoctorReport,
  GuaranteeId,
  GuaranteeStatus,
  HeadStep,
  HostProxy,
  HostProxyOptions,
  IsolationMode,
  ProbeOptions,
  ProbeOutcome,
  ProxyEvent,
} from './isolation/index.js';
export { SANDBOX_ENV_VARIABLES } from './env-vars.js';
