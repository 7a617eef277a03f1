// Confinement of pack code (docs/sandbox.md, "Confinement").
export { createConfinement } from './confinement.js';
export { runDoctor, type DoctorOptions, type DoctorReport } from './doctor.js';
export { ISOLATION_LIMITS } from './limits.js';
export type { ProxyEvent } from './proxy.js';
export {
  GUARANTEE_IDS,
  type Confinement,
  type ConfinementPolicy,
  type CreateConfinementOptions,
  type GuaranteeId,
  type GuaranteeStatus,
  type IsolationMode,
} from './types.js';
