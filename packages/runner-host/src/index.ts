export { RunnerHostError } from './errors.js';
export type { RunnerHostErrorCode } from './errors.js';

export {
  MAX_FRAME_BYTES,
  SUPPORTED_PROTOCOLS,
  WIRE_ERROR_CODES,
  acceptedFrameSchema,
  answerFrameSchema,
  byeFrameSchema,
  cancelFrameSchema,
  capabilitiesSchema,
  driverFrameSchemas,
  engineInfoSchema,
  failedFrameSchema,
  fatalFrameSchema,
  fileAccessSchema,
  helloFrameSchema,
  hostFrameSchemas,
  isRunEventFrame,
  isTerminalFrame,
  logFrameSchema,
  logLevelSchema,
  parseDriverFrame,
  parseHostFrame,
  peerInfoSchema,
  requestedFileAccess,
  pingFrameSchema,
  pongFrameSchema,
  progressFrameSchema,
  questionFrameSchema,
  questionOutcomeSchema,
  questionResolvedFrameSchema,
  resultFrameSchema,
  runFrameSchema,
  sessionFrameSchema,
  shutdownFrameSchema,
  stopReasonSchema,
  textFrameSchema,
  thinkingFrameSchema,
  toolEndFrameSchema,
  toolStartFrameSchema,
  warningFrameSchema,
  welcomeFrameSchema,
  wireErrorSchema,
} from './frames.js';
export type {
  AcceptedFrame,
  AnswerFrame,
  ByeFrame,
  CancelFrame,
  Capabilities,
  DriverFrame,
  EngineFileAccess,
  EngineInfo,
  FailedFrame,
  FatalFrame,
  FileAccess,
  HelloFrame,
  HostFrame,
  LogFrame,
  LogLevel,
  PeerInfo,
  PingFrame,
  PongFrame,
  ProgressFrame,
  QuestionFrame,
  QuestionOutcomeKind,
  QuestionResolvedFrame,
  ResultFrame,
  RunEventFrame,
  RunFrame,
  SessionFrame,
  ShutdownFrame,
  StopReason,
  TerminalFrame,
  TextFrame,
  ThinkingFrame,
  ToolEndFrame,
  ToolStartFrame,
  WarningFrame,
  WelcomeFrame,
  WireError,
} from './frames.js';

export { framesJsonSchema } from './json-schema.js';

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
