export { RunnerHostError, isRunnerHostError } from './errors.js';
export type { RunnerHostErrorCode } from './errors.js';

// The frames' zod schemas and the JSON Schema are in `@packwarden/runner-host/protocol`.
export * from './wire.js';

export { FrameDecoder, FrameWriter, InputBudget, encodeFrame, readFrames } from './codec.js';
export type {
  DecodeError,
  DecodeErrorCode,
  FrameDecoderOptions,
  FrameWriterOptions,
  ReadFramesOptions,
} from './codec.js';

export {
  DeltaRedactor,
  MAX_REMEMBERED_SECRETS,
  MAX_RUN_SECRETS,
  MIN_SECRET_LENGTH,
  REDACTED,
  ScrubbedTail,
  SecretSet,
  StreamScrubber,
  TAIL_ELLIPSIS,
} from './redactor.js';
export { runSecretValues } from './run-secrets.js';
export type { RunSecretFields } from './run-secrets.js';

export type {
  EngineEmitter,
  EngineRunOptions,
  MaintenanceEvent,
  QuestionOutcome,
  QuestionRequest,
  RunnerEngine,
  ToolEndEvent,
  ToolStartEvent,
} from './engine.js';

export { startRunnerHost } from './host.js';
export type {
  HostTimers,
  KillRequest,
  RunnerHost,
  RunnerHostExit,
  RunnerHostLogEntry,
  RunnerHostOptions,
} from './host.js';

export { serveRunnerSocket } from './socket-server.js';
export { MAX_SOCKET_PATH_BYTES } from './socket-path.js';
export type {
  RunnerSocketServer,
  RunnerSocketServerOptions,
  SocketSessionOptions,
} from './socket-server.js';

export { connectRunner, connectRunnerSocket, spawnRunner } from './client.js';
export type {
  ConnectRunnerOptions,
  QuestionAnswer,
  RunEvent,
  RunHandle,
  RunOptions,
  RunOutcome,
  RunRequest,
  RunnerClient,
  SpawnRunnerOptions,
  SpawnedRunner,
} from './client.js';
