// Confinement of pack code (docs/sandbox.md, "Confinement").
export { createConfinement } from './confinement.js';
export { runDoctor, type DoctorOptions, type DoctorReport } from './doctor.js';
export { ISOLATION_LIMITS } from './limits.js';
export { probeIsolation, type ProbeOptions, type ProbeOutcome } from './probe.js';
export {
  RequestHeadReader,
  startHostProxy,
  type HeadStep,
  type HostProxy,
  type HostProxyOptions,
  type ProxyEvent,
} from './proxy.js';
export { parseAllowedOrigin, type AllowedOrigin } from './origins.js';
export {
  GUARANTEE_IDS,
  type Confinement,
  type ConfinementPolicy,
  type CreateConfinementOptions,
  type GuaranteeId,
  type GuaranteeStatus,
  type IsolationMode,
} from './types.js';
