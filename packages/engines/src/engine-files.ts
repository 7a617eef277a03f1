/** The file that makes a folder an AgentHippo Custom Engine V2 engine. */
export const CUSTOM_ENGINE_MANIFEST_FILE = 'engine.manifest.json';

/** An engine id: what `spec.engine` and a store's `engine/<id>` name, and a folder name. */
export const ENGINE_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
