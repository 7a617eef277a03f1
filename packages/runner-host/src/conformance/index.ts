export { createScriptedTestEngine } from './scripted-engine.js';
export type { ScriptStep, ScriptedTestEngineOptions } from './scripted-engine.js';
export { runConformance } from './runner.js';
export type { ConformanceCaseResult, ConformanceOptions, ConformanceReport } from './runner.js';
export { conformanceCases } from './cases.js';
export type { CaseContext, ConformanceCase } from './cases.js';
export { RawPeer } from './peer.js';
export type { ConformanceTarget, ReceivedFrame } from './peer.js';
