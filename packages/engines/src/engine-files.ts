/** The file that makes a folder an AgentHippo Custom Engine V2 engine. */
export const CUSTOM_ENGINE_MANIFEST_FILE = 'engine.manifest.json';
