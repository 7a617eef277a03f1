import type { CommandWrapper } from '@packwarden/engines';
import type { ProbeOutcome } from './probe.js';
import type { ProxyEvent } from './proxy.js';

export type IsolationMode = 'required' | 'auto' | 'off';
export type GuaranteeId = 'fs-read' | 'fs-write' | 'network' | 'processes';
export const GUARANTEE_IDS: readonly GuaranteeId[] = Object.freeze([
  'fs-read',
  'fs-write',
  'network',
  'processes',
]);

export interface GuaranteeStatus {
  id: GuaranteeId;
  status: 'enforced' | 'unavailable';
  /** What enforces it (`bubblewrap`, `bubblewrap + host proxy`). */
  by?: string;
  /** Why it is unavailable. */
  reason?: string;
}

export interface ConfinementPolicy {
  /** The (verified) pack copy: visible read-only. */
  packDir: string;
  /** Writable when `fileAccess` allows, else read-only. */
  workspace: string;
  /** The engine's own writable state (HOME, TMPDIR, caches of the child). */
  engineStateDir: string;
  /** `full` is treated as `workspace-write`: under confinement nothing outside is writable. */
  fileAccess: 'read-only' | 'workspace-write' | 'full';
  /** `spec.permissions.network.allow` from the verified `agent.yaml`. */
  allowOrigins: readonly string[];
}

export interface Confinement {
  readonly mode: IsolationMode;
  /** What is enforced and what is not, for the caller's one warning. */
  readonly guarantees: readonly GuaranteeStatus[];
  /**
   * A host folder no confined command sees or writes (inside the confinement's runtime folder,
   * removed by `close()`): where host-side helpers that start confined commands are written
   * (the codex engine's launcher, `launcherDir`). Absent when nothing is confined.
   */
  readonly privateDir?: string;
  /**
   * Rewrites every engine child into its confined form; a command's `fileAccess` can only make
   * the workspace read-only, never writable beyond the policy. Throws `ERR_ISOLATION_CLOSED`
   * after `close()`.
   */
  readonly wrap: CommandWrapper;
  /** The host proxy's recent decisions (host-side evidence; empty without a proxy). */
  readonly proxyEvents: readonly ProxyEvent[];
  /** The run frame's `baseUrl` origin, per turn: replaces the previous model origin. */
  allowModelOrigin(origin: string): void;
  /**
   * Admits `origin` through the proxy until the returned release is called (counted: the same
   * origin admitted twice stays until both are released). The claude / codex engines admit their
   * per-turn model gateway this way (docs/sandbox.md, "Confinement").
   */
  admitOrigin(origin: string): () => void;
  /** Stops the proxy and removes the temporary files. Idempotent. */
  close(): Promise<void>;
}

export interface CreateConfinementOptions {
  mode: IsolationMode;
  /** The bubblewrap binary. Default: `bwrap` on `PATH` of `env`. */
  bwrapPath?: string;
  /** Where `PATH` is read. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * More host folders (or files) visible read-only at the same path: where a vendor CLI lives
   * outside the system directories (the claude / codex SDK's package folder). Default none.
   */
  readOnlyPaths?: readonly string[];
  /** The node binary the in-sandbox launcher runs on. Default `process.execPath`. */
  nodeBinary?: string;
  /** Where the private runtime folder (proxy socket, launcher) is created. Default `os.tmpdir()`. */
  runtimeParent?: string;
  /** Clock of the proxy log. Default `Date.now`. */
  now?: () => number;
  /**
   * Which program relays the sandbox's `127.0.0.1:3128` to the proxy: `perl` when
   * `/usr/bin/perl` exists (fast to start), else `node`. Default `auto`.
   */
  relay?: 'auto' | 'perl' | 'node';
  /** Platform seam. Default `process.platform`. */
  platform?: NodeJS.Platform;
  /**
   * What `probeIsolation` found, when the caller started it earlier with the same `bwrapPath`,
   * `env`, `nodeBinary` and `platform`, to overlap its bubblewrap run with other work (the
   * sandbox starts it while it copies and verifies the pack). Default: probe now.
   */
  probe?: Promise<ProbeOutcome>;
}
