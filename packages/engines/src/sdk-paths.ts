import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SdkEngineId } from './sdk-loader.js';

/** The folder of the package that holds `file` (its `node_modules/<name>` folder, links resolved). */
function packageFolder(file: string, name: string): string {
  const real = realpathSync(file);
  const marker = `/node_modules/${name}/`;
  const at = real.lastIndexOf(marker);
  return at === -1 ? dirname(real) : real.slice(0, at + marker.length - 1);
}

/**
 * The host folders the `claude` / `codex` engine's CLI runs from: the SDK's package and the native
 * CLI package it starts (resolved the way the SDK resolves them). Confinement makes them readable
 * inside its walls (`readOnlyPaths`), or the CLI cannot start there. `resolve` maps a specifier
 * to a file URL or path (default: `import.meta.resolve` of this module). Throws when a package is
 * missing.
 */
export function engineCliFolders(
  engine: SdkEngineId,
  resolve: (specifier: string) => string = (specifier) => import.meta.resolve(specifier),
): string[] {
  const toPath = (value: string) => (value.startsWith('file:') ? fileURLToPath(value) : value);
  const target = `${process.platform}-${process.arch}`;
  if (engine === 'claude') {
    const sdk = toPath(resolve('@anthropic-ai/claude-agent-sdk'));
    const native = createRequire(sdk).resolve(`@anthropic-ai/claude-agent-sdk-${target}/claude`);
    return [
      packageFolder(sdk, '@anthropic-ai/claude-agent-sdk'),
      packageFolder(native, `@anthropic-ai/claude-agent-sdk-${target}`),
    ];
  }
  const sdk = toPath(resolve('@openai/codex-sdk'));
  const wrapper = createRequire(sdk).resolve('@openai/codex/package.json');
  const native = createRequire(wrapper).resolve(`@openai/codex-${target}/package.json`);
  return [
    packageFolder(sdk, '@openai/codex-sdk'),
    packageFolder(wrapper, '@openai/codex'),
    packageFolder(native, `@openai/codex-${target}`),
  ];
}
