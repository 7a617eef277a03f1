/** What the embedder (the sandbox) hands every engine call as `runtime`. */
export interface EngineRuntime {
  /** The authoritative workspace: engines work here, whatever a run frame says. */
  readonly workspaceRoot: string;
  /** Writable state (caches, engine data) for this sandbox. */
  readonly stateDir: string;
}
