export { EngineError, isEngineError } from './errors.js';
export type { EngineErrorCode } from './errors.js';

export { BUILT_IN_ENGINES, loadPackEngine } from './load-pack-engine.js';
export { findInstalledEngine, type InstalledEngineSource } from './installed-engine.js';
export type { EngineSource, LoadPackEngineOptions } from './load-pack-engine.js';

export type { PackEngine, PackIdentity } from './pack-engine.js';
export type { EngineRuntime } from './runtime.js';

export { DEFAULT_DECLARED_FILE_ACCESS, effectiveFileAccess } from './permissions.js';
export type { DeclaredFileAccess, TurnFileAccess } from './permissions.js';

export {
  CUSTOM_ENGINE_MANIFEST_FILE,
  CUSTOM_ENGINE_MANIFEST_LIMITS,
  CUSTOM_ENGINE_MANIFEST_MAX_BYTES,
  ENGINE_ID_PATTERN,
  ENV_VAR_NAME_PATTERN,
  customEngineManifestSchema,
  isWritableEnvName,
  loadCustomEngineManifest,
  parseCustomEngineManifest,
} from './custom-manifest.js';
export type { CustomEngineManifest, LoadedCustomEngineManifest } from './custom-manifest.js';

export { loadCustomEngine } from './custom-engine.js';
export type { LoadCustomEngineOptions } from './custom-engine.js';
export type {
  CustomEngineAgent,
  CustomEngineEmitter,
  CustomEngineInit,
  CustomEngineInstance,
  CustomEngineLogger,
  CustomEngineQuestion,
  CustomEngineQuestionAnswer,
  CustomEngineRouting,
  CustomEngineSession,
  CustomEngineTurn,
} from './turn.js';
export { ENGINE_CHILD_LIMITS } from './engine-child-protocol.js';
export { MCP_LIMITS, resolveMcpServers } from './mcp-servers.js';
export type { McpServerConfig } from './mcp-servers.js';
export { PACK_CONTENT_LIMITS, readPackContent } from './pack-content.js';
export type { PackContent } from './pack-content.js';
export { DEFAULT_RULES_FILE, WORKSPACE_SYNC_LIMITS, syncWorkspace } from './workspace-sync.js';
export type { SyncedPaths } from './workspace-sync.js';

export { createExecEngine } from './exec-engine.js';
export type { CreateExecEngineOptions } from './exec-engine.js';
export { execSpecSchema, parseExecSpec } from './exec-spec.js';
export type { ExecSpec, ResolvedExecSpec } from './exec-spec.js';
export { StderrTail } from './stderr-tail.js';

export { createClaudeEngine } from './claude-engine.js';
export type {
  ClaudeAgentSdk,
  ClaudeQueryOptions,
  CreateClaudeEngineOptions,
} from './claude-engine.js';
export { createCodexEngine } from './codex-engine.js';
export type {
  CodexClientOptions,
  CodexSdk,
  CodexThreadLike,
  CodexThreadOptions,
  CreateCodexEngineOptions,
} from './codex-engine.js';
export { ENGINE_SDKS } from './sdk-loader.js';
export { engineCliFolders } from './sdk-paths.js';
export type { SdkEngineId } from './sdk-loader.js';
export {
  CLAUDE_READ_TOOLS,
  CLAUDE_WRITE_TOOLS,
  claudePermissions,
  codexSandboxMode,
} from './sdk-permissions.js';
export type { ClaudePermissionOptions, CodexSandboxMode } from './sdk-permissions.js';
export type { CommandWrapper, WrappableCommand } from './command-wrapper.js';
