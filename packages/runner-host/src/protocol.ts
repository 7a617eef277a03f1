// `@packwarden/runner-host/protocol`: the wire protocol as data — one zod schema per frame and per
// part, the maps of driver and host frames, the JSON Schema, and the parsers and types again, for
// drivers in other languages' tooling, validators and docs (README "The protocol"). The main entry
// keeps the parsers, guards, constants and types only: the schemas are values a host or driver
// does not need, and a consumer should not have to carry ~33 zod exports through its main import.
export * from './wire.js'; // the same list as the main entry

export {
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
  logFrameSchema,
  logLevelSchema,
  peerInfoSchema,
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
export { framesJsonSchema } from './json-schema.js';
