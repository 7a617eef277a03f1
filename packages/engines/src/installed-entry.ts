// `@packwarden/engines/installed`: where an installed engine is, without the engines themselves
// (no engine code, no zod), for tools that only look (`pack verify --installed`).
export { findInstalledEngine, type InstalledEngineSource } from './installed-engine.js';
