/** A parsed JSON object, as the vendor CLIs' streams and files hold them (their data, not ours). */
export type JsonObject = Record<string, unknown>;

/** Whether `value` is a JSON object (not `null`, not an array): the first check on every record read. */
export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
