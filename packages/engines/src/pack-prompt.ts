import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentManifest } from '@packwarden/pack-manifest';
import { PACK_CONTENT_LIMITS, readPackContent } from './pack-content.js';
import { readFileInside } from './safe-fs.js';

/** The pack's instructions file at its root, which the claude and codex engines give the model. */
export const PACK_INSTRUCTIONS_FILE = 'AGENTS.md';

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The pack's prompt for the claude and codex engines (engines README, "The pack's prompt"):
 * `spec.prompts.system`, then the pack's own `AGENTS.md` (unless that is the same file), each
 * read inside the pack (a symlink out of it is ignored), bounded and valid UTF-8, joined by a
 * blank line. `undefined` when the pack has neither.
 */
export async function readPackPrompt(
  packDir: string,
  manifest: AgentManifest,
): Promise<string | undefined> {
  const content = await readPackContent(packDir, manifest);
  const root = content.packDir ?? (await realpath(packDir));
  const parts: string[] = [];
  if (content.systemPrompt !== undefined && content.systemPrompt.trim() !== '')
    parts.push(content.systemPrompt);
  const agentsPath = join(root, PACK_INSTRUCTIONS_FILE);
  const agentsReal = await realpath(agentsPath).catch(() => undefined);
  if (agentsReal !== undefined && agentsReal !== content.systemPromptPath) {
    const data = await readFileInside(root, agentsPath, PACK_CONTENT_LIMITS.maxPromptBytes);
    let text: string | undefined;
    try {
      text = data === undefined ? undefined : fatalUtf8.decode(data);
    } catch {
      text = undefined;
    }
    if (text !== undefined && text.trim() !== '') parts.push(text);
  }
  return parts.length > 0 ? parts.join('\n\n') : undefined;
}
